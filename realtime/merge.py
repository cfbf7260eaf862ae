"""Merge each value's minute sketches into its hour sketch once an hour has closed.

See :mod:`realtime.keys`, Value hours, for the keys and the protocol. Per shard and hour of a
site, in small atomic steps (scripts), so that Redis is never held for long however many
values an hour holds:

1. ``begin``, for up to :data:`BEGIN_CHUNK` hours in one step: nothing to do for an hour whose
   marker says merged, nor (but set it to merged) for one without counters: no event of the
   site in it, as most hours of a quiet site. Else set it to merging. From here on every batch
   that counts a visitor of the hour under a value also adds it to the value's hour sketch
   (:mod:`realtime.store`), so values that arrive later are covered.
2. Read the values of the hour's minute sorted sets (one ZUNION per dimension).
3. ``merge``: per value, replace its hour sketch by the PFMERGE of its 60 minute sketches (the
   minute sketches hold every visitor the hour sketch may have been sent: replacing is exact).
   A step does nothing once the marker is gone (a rebuild deleted the hour meanwhile).
4. ``finish``: the marker becomes merged, if it still says merging.

Every step may run again: a merge interrupted anywhere leaves the marker at merging (readers
keep using the minute sketches) and the next run redoes it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from footfall.vocabulary import EVENT_COUNT_DIMENSIONS, EVENT_DIMENSIONS
from realtime.keys import HOUR_MS, MERGE_DELAY_MS, MERGED
from realtime.store import CounterStore

log = logging.getLogger(__name__)

# The dimensions whose values have visitor sketches (realtime.keys).
VALUE_DIMENSIONS = (*EVENT_DIMENSIONS, *EVENT_COUNT_DIMENSIONS)
# Values per merge step: small, because a PFMERGE into a sparse destination sets its registers
# one by one and a script holds Redis for its whole run (figures: bench/README.md).
MERGE_CHUNK = 16
STEPS_PER_TRIP = 50  # merge steps pipelined per round trip
# Hours per begin step: a worker's first look at a site covers the retention window's 48 hours
# in one step instead of one each, and a step stays short however long the range.
BEGIN_CHUNK = 64

# ARGV: per hour, its marker, expire-at and counters. Returns per hour 1 when it is merged
# already, 2 when it is now (without counters the site had no event in the hour, so it has no
# sketch to merge; a later one goes to the hour sketches as well), else 0 (now merging).
_BEGIN = """
local states = {}
for i = 1, #ARGV, 3 do
  local state, result = redis.call('GET', ARGV[i]), 0
  if state == '$MERGED' then
    result = 1
  elseif not state then
    local empty = redis.call('EXISTS', ARGV[i + 2]) == 0
    redis.call('SET', ARGV[i], empty and '$MERGED' or '$MERGING')
    redis.call('EXPIREAT', ARGV[i], ARGV[i + 1])
    if empty then result = 2 end
  end
  states[#states + 1] = result
end
return states
"""
# ARGV: marker, minute-key head, minute-key tail, hour-key prefix, first minute, expire-at,
# values... Returns 0 (nothing done) once the marker no longer says merging.
_MERGE = """
if redis.call('GET', ARGV[1]) ~= '$MERGING' then return 0 end
local head, tail, hprefix, first, when = ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5]), ARGV[6]
local keys = {}
for v = 7, #ARGV do
  local value = ARGV[v]
  for k = 0, 59 do keys[k + 1] = head .. string.format('%d', first + k) .. tail .. value end
  local dest = hprefix .. value
  redis.call('DEL', dest)
  redis.call('PFMERGE', dest, unpack(keys))
  redis.call('EXPIREAT', dest, when)
end
return 1
"""
# ARGV: marker. Returns 1 when the hour is now merged.
_FINISH = """
if redis.call('GET', ARGV[1]) == '$MERGING' then
  redis.call('SET', ARGV[1], '$MERGED', 'KEEPTTL')
  return 1
end
return 0
"""


def _script(text: str) -> str:
    return text.replace("$MERGED", "1").replace("$MERGING", "0")


def closed_hours(first_ms: int, now_ms: int, delay_ms: int = MERGE_DELAY_MS) -> range:
    """The UTC hours from the one holding ``first_ms`` whose end is at least ``delay_ms`` before ``now_ms``."""
    return range(first_ms // HOUR_MS, max((now_ms - delay_ms) // HOUR_MS, first_ms // HOUR_MS))


class HourMerger:
    """Merges the value sketches of closed hours (module docstring) in every shard of a store."""

    def __init__(self, store: CounterStore, dims: Sequence[str] = VALUE_DIMENSIONS) -> None:
        self.store, self.layout, self.dims = store, store.layout, tuple(dims)
        self._scripts = [
            tuple(client.register_script(_script(text)) for text in (_BEGIN, _MERGE, _FINISH))
            for client in store.shards
        ]

    def merge(self, site: str, hours: Iterable[int]) -> int:
        """Merge ``site``'s ``hours`` in every shard (callers pass closed hours only); return
        how many hour-shards this call completed (those merged already are skipped)."""
        hours, done = list(hours), 0
        for shard in range(len(self.store.shards)):
            for start in range(0, len(hours), BEGIN_CHUNK):
                chunk = hours[start : start + BEGIN_CHUNK]
                for hour, state in zip(chunk, self._begin(shard, site, chunk), strict=True):
                    if state == 2 or (state == 0 and self._merge_values(shard, site, hour)):
                        done += 1
        return done

    def _begin(self, shard: int, site: str, hours: Sequence[int]) -> list[int]:
        """Step 1 for ``hours`` of ``site`` in one shard: each hour's state (the script's)."""
        layout, args = self.layout, list[str | int]()
        for hour in hours:
            args += [layout.hour_merged(site, hour), layout.hour_expires_at(hour), layout.hour_counters(site, hour)]
        return [int(state) for state in self._scripts[shard][0](args=args)]

    def _merge_values(self, shard: int, site: str, hour: int) -> bool:
        """Steps 2-4 for one merging hour of ``site`` in one shard; True when this call completed it."""
        layout, client = self.layout, self.store.shards[shard]
        _, merge, finish = self._scripts[shard]
        marker, expires = layout.hour_merged(site, hour), layout.hour_expires_at(hour)
        minutes = range(hour * 60, hour * 60 + 60)
        pipe = client.pipeline(transaction=False)
        for dim in self.dims:
            pipe.zunion([layout.top(site, m, dim) for m in minutes])
        values = pipe.execute()
        pipe = client.pipeline(transaction=False)
        for dim, members in zip(self.dims, values, strict=True):
            head, tail = layout.dim_visitors_parts(site, dim)
            prefix = layout.hour_dim_visitors(site, hour, dim, "")
            for start in range(0, len(members), MERGE_CHUNK):
                chunk = members[start : start + MERGE_CHUNK]
                merge(args=[marker, head, tail, prefix, minutes.start, expires, *chunk], client=pipe)
                if len(pipe) >= STEPS_PER_TRIP:
                    pipe.execute()
        pipe.execute()
        return finish(args=[marker]) == 1

    def is_merged(self, site: str, hour: int) -> bool:
        """Whether every shard has merged ``site``'s ``hour``."""
        marker = self.layout.hour_merged(site, hour)
        return all(client.get(marker) == MERGED for client in self.store.shards)


class MergeSchedule:
    """What a realtime worker merges: every closed hour of the retention window, once, of each
    site it has counted (the first time it sees a site, the hours before it started too: one
    begin step looks at up to :data:`BEGIN_CHUNK` of them), in a background thread so that a
    merge never holds up the batches. An hour is closed once the worker's event-time watermark is
    ``delay_ms`` past its end: a worker catching up on a backlog merges an hour when it has
    read past it, not while its events still arrive (each would then be written twice). A
    merge that fails is tried again later."""

    def __init__(self, store: CounterStore, delay_ms: int = MERGE_DELAY_MS) -> None:
        self.merger = HourMerger(store)
        self.delay_ms = delay_ms
        self.retention_ms = store.layout.retention_s * 1000
        self._next: dict[str, int] = {}  # site -> the start (ms) of its first hour not merged by this worker
        self._watermark = 0
        self._running: Future[None] | None = None
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="realtime-merge")

    def seen(self, sites: Iterable[str], watermark_ms: int) -> None:
        """Note that ``sites`` were counted and that the worker has read its partitions up to
        event time ``watermark_ms`` (the oldest event of its latest batch; now when it is idle);
        start merging what is due, unless a merge is still running (then a later call does)."""
        self._watermark = max(self._watermark, watermark_ms)
        for site in sites:
            if site not in self._next:
                self._next[site] = max(self._watermark - self.retention_ms, 0)
        if self._running is not None and not self._running.done():
            return
        due = [
            (site, hours)
            for site, first in self._next.items()
            if (hours := closed_hours(first, self._watermark, self.delay_ms))
        ]
        if due:
            self._running = self._thread.submit(self._merge, due)

    def _merge(self, due: list[tuple[str, range]]) -> None:
        for site, hours in due:
            try:
                self.merger.merge(site, hours)
            except Exception:  # Redis down or busy: the minute sketches still answer; try later
                log.exception("merging the value sketches of %s, hours %s-%s", site, hours.start, hours.stop - 1)
                continue
            self._next[site] = hours.stop * HOUR_MS

    def wait(self) -> None:
        """Wait for the merge under way, if any."""
        if self._running is not None:
            self._running.result()

    def close(self) -> None:
        self._thread.shutdown(wait=True, cancel_futures=True)
