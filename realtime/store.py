"""The realtime counter store: applies pre-aggregated batches to Redis exactly once.

Key layout and TTLs: see :mod:`realtime.keys`.

Exactly-once under at-least-once delivery: one Lua script checks the dedup marks of all
events of a batch and, only if none is marked, writes the marks, every increment of the
batch and the consumer offsets it covers. Redis runs a script atomically and logs it to
the append-only file as one unit, so a crash leaves either all of it or none of it: a
redelivered batch either finds its marks (nothing doubles) or finds nothing (nothing was
lost). When some events of a batch were already counted (a redelivery after a crash, a
replay), the script changes nothing and names them; the batch is re-aggregated without
them and applied again. The common case is therefore one round trip per batch; the
duplicates count of the running stats is written by the same script call.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import redis

from footfall_capture.events import Event
from realtime.aggregate import Batch, aggregate, without
from realtime.keys import ACTIVE_WINDOW_MS, HOUR_MS, KeyLayout

# ARGV: dedup ttl, n, n dedup keys, then ops: "Z" key member incr | "H" key field incr |
# "P" key count members... | "A" key member score | "S" key field value | "E" key unix-seconds |
# "T" key max-score (trim a sorted set of last-seen times) |
# "M" key stats-key hour (set the hours_from marker once: see realtime.keys)
APPLY = """
local ttl = tonumber(ARGV[1])
local n = tonumber(ARGV[2])
local dups = {}
for i = 1, n do
  if redis.call('EXISTS', ARGV[2 + i]) == 1 then dups[#dups + 1] = ARGV[2 + i] end
end
if #dups > 0 then return dups end
for i = 1, n do redis.call('SET', ARGV[2 + i], '1', 'EX', ttl) end
local i = 3 + n
while i <= #ARGV do
  local op = ARGV[i]
  if op == 'Z' then redis.call('ZINCRBY', ARGV[i + 1], ARGV[i + 3], ARGV[i + 2]); i = i + 4
  elseif op == 'H' then redis.call('HINCRBY', ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]); i = i + 4
  elseif op == 'P' then
    local m = tonumber(ARGV[i + 2])
    redis.call('PFADD', ARGV[i + 1], unpack(ARGV, i + 3, i + 2 + m)); i = i + 3 + m
  elseif op == 'A' then redis.call('ZADD', ARGV[i + 1], 'GT', ARGV[i + 3], ARGV[i + 2]); i = i + 4
  elseif op == 'S' then redis.call('HSET', ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]); i = i + 4
  elseif op == 'E' then redis.call('EXPIREAT', ARGV[i + 1], ARGV[i + 2]); i = i + 3
  elseif op == 'T' then redis.call('ZREMRANGEBYSCORE', ARGV[i + 1], '-inf', ARGV[i + 2]); i = i + 3
  elseif op == 'M' then
    if redis.call('EXISTS', ARGV[i + 1]) == 0 then
      local from = 0
      if redis.call('EXISTS', ARGV[i + 2]) == 1 then from = ARGV[i + 3] end
      redis.call('SET', ARGV[i + 1], from)
    end
    i = i + 4
  else return redis.error_reply('unknown op ' .. tostring(op)) end
end
return {}
"""
PFADD_CHUNK = 500  # Lua's unpack() has a stack limit; long member lists go in several ops


@dataclass(frozen=True, slots=True)
class ApplyResult:
    counted: int  # events whose effects were applied by this call
    duplicates: int  # events already counted before (redeliveries, replays, retries)
    late: int  # events older than the realtime window, left to the batch layer
    round_trips: int


class CounterStore:
    """Apply event batches to Redis counters (see the module docstring for the guarantees)."""

    def __init__(self, client: redis.Redis, layout: KeyLayout | None = None) -> None:
        self.client = client
        self.layout = layout or KeyLayout()
        self._script = client.register_script(APPLY)

    def apply(
        self,
        events: Iterable[Event],
        now_ms: int,
        offsets: Mapping[str, int] | None = None,
        group: str = "realtime",
        known_duplicates: int = 0,
    ) -> ApplyResult:
        """Count ``events`` exactly once; record ``offsets`` (``topic:partition`` -> next
        offset) of ``group`` in the same atomic step. ``known_duplicates``: events the caller
        already left out because it knows them counted (they only add to the stats)."""
        events = list(events)
        batch = aggregate(events, self.layout, now_ms)
        late = batch.late
        duplicates = batch.duplicates_in_batch + known_duplicates
        skip: set[str] = set()
        trips = 0
        while True:
            trips += 1
            already = self._script(args=self._args(batch, offsets or {}, group, now_ms, duplicates + len(skip)))
            if not already:
                break
            skip |= {key.decode() if isinstance(key, bytes) else key for key in already}
            batch = without(events, skip, self.layout, now_ms)
        duplicates += len(skip)
        return ApplyResult(counted=batch.events, duplicates=duplicates, late=late, round_trips=trips)

    def _args(
        self, batch: Batch, offsets: Mapping[str, int], group: str, now_ms: int, duplicates: int = 0
    ) -> list[object]:
        args: list[object] = [self.layout.retention_s, len(batch.dedup_keys), *batch.dedup_keys]
        # Before anything else of this step touches the stats: do they show older counts?
        args += ["M", self.layout.hours_from, self.layout.stats, now_ms // HOUR_MS + 1]
        for (key, member), incr in batch.zincr.items():
            args += ["Z", key, member, incr]
        for (key, field), incr in batch.hincr.items():
            args += ["H", key, field, incr]
        for key, members in batch.pfadd.items():
            ordered = sorted(members)
            for start in range(0, len(ordered), PFADD_CHUNK):
                chunk = ordered[start : start + PFADD_CHUNK]
                args += ["P", key, len(chunk), *chunk]
        for (key, member), score in batch.seen_at.items():
            args += ["A", key, member, score]
        for key, when in batch.expire_at.items():
            args += ["E", key, when]
        # Last-seen sets only need the concurrency window; older members are dropped.
        for key in {key for key, _ in batch.seen_at}:
            args += ["T", key, now_ms - 2 * ACTIVE_WINDOW_MS]
        stats = self.layout.stats
        args += ["H", stats, "events", batch.events, "H", stats, "late", batch.late]
        if duplicates:
            args += ["H", stats, "duplicates", duplicates]
        for partition, offset in offsets.items():
            args += ["S", self.layout.offsets(group), partition, offset]
        return args
