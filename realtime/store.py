"""The realtime counter store: applies pre-aggregated batches to Redis exactly once.

Key layout, caps, dedup window and shards: see :mod:`realtime.keys`.

Exactly-once under at-least-once delivery, per shard: one Lua script, which Redis runs
atomically and logs to the append-only file as one unit, first checks that the shard's
record of consumer offsets is what the worker expects (``ff:rt:offsets:{group}``), then the
dedup marks of the batch's events, and only if both pass writes the marks, every increment
of the batch and the offsets it covers. A crash leaves either all of it or none of it, so
the offsets a shard records always match its counts: a worker resumes each partition from
the least offset its shards record, and each shard takes only the messages past its own
record (:class:`OffsetsMoved` tells the worker when a record moved under it: another worker
wrote, or the shard restarted from an older append-only file). When some events of a batch
were counted already (a retried beacon within the dedup window), the script changes
nothing and names them; the batch is re-aggregated without them and applied again. The
common case is one round trip per batch and shard.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import redis

from footfall.ping import Ping
from footfall.unreadable import skip
from footfall.vocabulary import VALUE_OTHER
from footfall_capture.events import Event
from realtime.aggregate import AmountOp, Batch, ValueOp, aggregate
from realtime.keys import ACTIVE_WINDOW_MS, HOUR_MS, MARK_BYTES, VISITOR_CHARS, KeyLayout, fingerprint, shard_of

# ARGV: offsets key, np, np x (field, expected or "", next offset);
# nsites, per site (current set, previous set, expire-at, marks joined);
# then ops: "H" key field incr | "P" key visitors joined |
# "A" key (13-digit last-seen ms + visitor) joined | "E" key unix-seconds |
# "T" key max-score (trim a sorted set of last-seen times) |
# "W" key cap visitors-prefix expire-at hour-marker hour-prefix hour-expire-at n,
#     n x (incr, value, visitors joined)
#     (the values of one capped sorted set, see ValueOp; prefix "": no visitors; while the
#     hour's marker exists, the visitors also go to the value's hour sketch: realtime.keys) |
# "V" key amount-key cap n, n x (incr, amount, value)
#     (the values of one capped sorted set and their amounts in a second one, see AmountOp) |
# "M" key stats-key hour (set the hours_from marker once: see realtime.keys)
# Returns {} when applied, {"offsets", field, recorded, ...} when the shard's offsets differ
# from the expected ones, {"dups", mark, ...} when some events are marked already.
# Every redis.call() from Lua costs about a microsecond of its own, so the script makes as
# few as it can: one SMISMEMBER per generation and site, one ZCARD per capped set. Lists of
# marks and visitors travel as one argument of fixed-width items (realtime.keys: MARK_BYTES,
# VISITOR_CHARS): the client packs each argument for about as long as Lua takes to cut a
# whole list, and Redis spends no more on the cutting than on the arguments it saves.
_APPLY_LUA = """
local MARK, VISITOR = $MARK, $VISITOR
local function split(joined, width)  -- "aabbcc", 2 -> {"aa", "bb", "cc"}
  local list = {}
  for k = 1, #joined, width do list[#list + 1] = string.sub(joined, k, k + width - 1) end
  return list
end
local okey, np = ARGV[1], tonumber(ARGV[2])
local moved = {}
for i = 3, 2 + 3 * np, 3 do
  local recorded = redis.call('HGET', okey, ARGV[i]) or ''
  if recorded ~= ARGV[i + 1] then moved[#moved + 1] = ARGV[i]; moved[#moved + 1] = recorded end
end
if #moved > 0 then table.insert(moved, 1, 'offsets'); return moved end
local marks = 3 + 3 * np
local i, dups = marks + 1, {}
local fps = {}
for s = 1, tonumber(ARGV[marks]) do
  local list = split(ARGV[i + 3], MARK)
  fps[s] = list
  if #list > 0 then
    for g = 0, 1 do
      local found = redis.call('SMISMEMBER', ARGV[i + g], unpack(list))
      for k = 1, #list do if found[k] == 1 then dups[#dups + 1] = list[k] end end
    end
  end
  i = i + 4
end
if #dups > 0 then table.insert(dups, 1, 'dups'); return dups end
i = marks + 1
for s = 1, tonumber(ARGV[marks]) do
  if #fps[s] > 0 then
    redis.call('SADD', ARGV[i], unpack(fps[s]))
    redis.call('EXPIREAT', ARGV[i], ARGV[i + 2])
  end
  i = i + 4
end
while i <= #ARGV do
  local op = ARGV[i]
  if op == 'W' then
    local key, cap, prefix, when = ARGV[i + 1], tonumber(ARGV[i + 2]), ARGV[i + 3], ARGV[i + 4]
    local hprefix, hwhen, n = ARGV[i + 6], ARGV[i + 7], tonumber(ARGV[i + 8])
    -- One EXISTS per sorted set and step: the hour's value sketches are (being) merged.
    local merged = prefix ~= '' and ARGV[i + 5] ~= '' and redis.call('EXISTS', ARGV[i + 5]) == 1
    local held = nil
    for j = i + 9, i + 6 + 3 * n, 3 do
      local incr, value = ARGV[j], ARGV[j + 1]
      local new = tonumber(redis.call('ZINCRBY', key, incr, value)) == tonumber(incr)
      if new then
        held = held or redis.call('ZCARD', key) - 1
        if held >= cap then
          redis.call('ZREM', key, value)
          value = '$OTHER'
          new = tonumber(redis.call('ZINCRBY', key, incr, value)) == tonumber(incr)
          held = nil
        else held = held + 1 end
      end
      -- Every value of a minute's set has its HyperLogLog, made (with its expiry) when the
      -- value is: one EXPIREAT per value and minute, not per value and batch.
      if prefix ~= '' then
        local uv = prefix .. value
        if ARGV[j + 2] ~= '' then redis.call('PFADD', uv, unpack(split(ARGV[j + 2], VISITOR)))
        elseif new then redis.call('PFADD', uv) end
        if new then redis.call('EXPIREAT', uv, when) end
        if merged then
          local huv = hprefix .. value
          if ARGV[j + 2] ~= '' then redis.call('PFADD', huv, unpack(split(ARGV[j + 2], VISITOR)))
          else redis.call('PFADD', huv) end
          redis.call('EXPIREAT', huv, hwhen)
        end
      end
    end
    i = i + 9 + 3 * n
  elseif op == 'V' then
    local key, amounts, cap, n = ARGV[i + 1], ARGV[i + 2], tonumber(ARGV[i + 3]), tonumber(ARGV[i + 4])
    local held = nil
    for j = i + 5, i + 2 + 3 * n, 3 do
      local incr, value = ARGV[j], ARGV[j + 2]
      if tonumber(redis.call('ZINCRBY', key, incr, value)) == tonumber(incr) then
        held = held or redis.call('ZCARD', key) - 1
        if held >= cap then
          redis.call('ZREM', key, value)
          value = '$OTHER'
          redis.call('ZINCRBY', key, incr, value)
          held = nil
        else held = held + 1 end
      end
      -- The amount goes where the count went: a value's time and reports stay together.
      if ARGV[j + 1] ~= '0' then redis.call('ZINCRBY', amounts, ARGV[j + 1], value) end
    end
    i = i + 5 + 3 * n
  elseif op == 'H' then redis.call('HINCRBY', ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]); i = i + 4
  elseif op == 'P' then redis.call('PFADD', ARGV[i + 1], unpack(split(ARGV[i + 2], VISITOR))); i = i + 3
  elseif op == 'A' then  -- last-seen times: 13-digit milliseconds, then the visitor, repeated
    local pairs, args = split(ARGV[i + 2], 13 + VISITOR), {'GT'}
    for k = 1, #pairs do
      args[#args + 1] = string.sub(pairs[k], 1, 13)
      args[#args + 1] = string.sub(pairs[k], 14)
    end
    redis.call('ZADD', ARGV[i + 1], unpack(args)); i = i + 3
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
for i = 3, 2 + 3 * np, 3 do redis.call('HSET', okey, ARGV[i], ARGV[i + 2]) end
return {}
"""
APPLY = (
    _APPLY_LUA.replace("$MARK", str(MARK_BYTES)).replace("$VISITOR", str(VISITOR_CHARS)).replace("$OTHER", VALUE_OTHER)
)
# Lua's unpack() has a stack limit (~8,000): longer lists of ids go in several parts, and
# a sorted set's values in several "W" operations.
PFADD_CHUNK = 500
MARKS_CHUNK = 5000

# topic:partition -> (the next offset the shard is expected to record now, or None for no
# record; the next offset after this batch)
Offsets = Mapping[str, tuple[int | None, int]]


@dataclass(frozen=True, slots=True)
class ApplyResult:
    counted: int  # events whose effects were applied by this call
    duplicates: int  # events already counted before (retried beacons, replays)
    late: int  # events older than the realtime window, left to the batch layer
    round_trips: int


def _by_set(values: list[ValueOp]) -> list[tuple[str, list[ValueOp]]]:
    """Value operations grouped by sorted set, each group in its batch order (busiest first)."""
    groups: dict[str, list[ValueOp]] = {}
    for op in values:
        groups.setdefault(op.top_key, []).append(op)
    return list(groups.items())


def _by_pair(amounts: list[AmountOp]) -> list[tuple[tuple[str, str], list[AmountOp]]]:
    """Amount operations grouped by their pair of sorted sets, each group in batch order."""
    groups: dict[tuple[str, str], list[AmountOp]] = {}
    for op in amounts:
        groups.setdefault((op.count_key, op.amount_key), []).append(op)
    return list(groups.items())


class Prepared(NamedTuple):
    """A batch aggregated for one shard, ready to send (see :meth:`CounterStore.prepare`)."""

    shard: int
    events: Sequence[Event]
    marks: Sequence[bytes] | None
    now_ms: int
    group: str
    offsets: Offsets
    duplicates: int
    batch: Batch
    args: list[object]


class OffsetsMoved(Exception):
    """A shard's recorded offsets differ from what the writer expected: nothing was written.

    ``recorded`` maps each differing ``topic:partition`` to the shard's record (None: none)."""

    def __init__(self, shard: int, recorded: dict[str, int | None]) -> None:
        super().__init__(f"shard {shard} records other offsets: {recorded}")
        self.shard = shard
        self.recorded = recorded


class CounterStore:
    """Apply event batches to the Redis counters of one or more shards (see the module
    docstring for the guarantees). ``client`` is the first shard: the home of what is not
    sharded (worker heartbeats, the health summary)."""

    def __init__(self, clients: redis.Redis | Sequence[redis.Redis], layout: KeyLayout | None = None) -> None:
        self.shards: tuple[redis.Redis, ...] = tuple(clients) if isinstance(clients, Sequence) else (clients,)
        if not self.shards:
            raise ValueError("a counter store needs at least one Redis")
        self.client = self.shards[0]
        self.layout = layout or KeyLayout()
        self._scripts = [client.register_script(APPLY) for client in self.shards]

    def shard_of(self, event: Event) -> int:
        return shard_of(event.visitor_id or event.event_id, len(self.shards))

    def split(self, events: Iterable[Event]) -> list[list[Event]]:
        """``events`` by shard (the list of shard i at index i)."""
        parts: list[list[Event]] = [[] for _ in self.shards]
        if len(parts) == 1:
            parts[0] = list(events)
            return parts
        for event in events:
            parts[self.shard_of(event)].append(event)
        return parts

    def apply(self, events: Iterable[Event], now_ms: int, group: str = "realtime") -> ApplyResult:
        """Count ``events`` exactly once across the shards, recording no offsets (a replay,
        a test): duplicates within the dedup window are found by their marks."""
        results = [self.write(shard, part, now_ms, group) for shard, part in enumerate(self.split(events)) if part]
        return ApplyResult(
            counted=sum(r.counted for r in results),
            duplicates=sum(r.duplicates for r in results),
            late=sum(r.late for r in results),
            round_trips=sum(r.round_trips for r in results),
        )

    def write(
        self,
        shard: int,
        events: Sequence[Event],
        now_ms: int,
        group: str = "realtime",
        offsets: Offsets | None = None,
        known_duplicates: int = 0,
    ) -> ApplyResult:
        """Count ``events`` (all of this shard) once in shard ``shard`` and move its offsets of
        ``group`` from the expected ones to the next ones in the same atomic step; raise
        :class:`OffsetsMoved` (nothing written) when the shard records others.
        ``known_duplicates``: events the caller already left out because it knows them
        counted (they only add to the stats)."""
        return self.send(self.prepare(shard, events, now_ms, group, offsets, known_duplicates))

    def prepare(
        self,
        shard: int,
        events: Sequence[Event],
        now_ms: int,
        group: str = "realtime",
        offsets: Offsets | None = None,
        known_duplicates: int = 0,
        marks: Sequence[bytes] | None = None,
    ) -> Prepared:
        """The first half of :meth:`write`, all in Python: aggregate and build the step.
        ``marks``: the events' fingerprints (realtime.keys), when the caller has them."""
        batch = aggregate(events, self.layout, now_ms, marks=marks)
        offsets = offsets or {}
        duplicates = batch.duplicates_in_batch + known_duplicates
        args = self._args(batch, offsets, group, now_ms, duplicates)
        return Prepared(shard, events, marks, now_ms, group, offsets, duplicates, batch, args)

    def send(self, prepared: Prepared) -> ApplyResult:
        """The second half of :meth:`write`: the Redis step (again without the events it finds
        counted already)."""
        shard, events, marks, now_ms, group, offsets, duplicates, batch, args = prepared
        skip, trips = set[bytes](), 0
        while True:
            trips += 1
            reply = self._scripts[shard](args=args)
            if not reply:
                break
            kind, rest = reply[0], reply[1:]  # marks are raw bytes: only offsets are text
            if kind == b"offsets":
                texts = [item.decode() for item in rest]
                moved = {
                    field: int(value) if value else None for field, value in zip(texts[::2], texts[1::2], strict=True)
                }
                raise OffsetsMoved(shard, moved)
            skip |= set(rest)
            batch = aggregate(events, self.layout, now_ms, skip, marks)
            args = self._args(batch, offsets, group, now_ms, duplicates + len(skip))
        return ApplyResult(counted=batch.events, duplicates=duplicates + len(skip), late=batch.late, round_trips=trips)

    def is_marked(self, site: str, event_id: str, now_ms: int) -> bool:
        """Whether an event id is marked as counted in the dedup window of ``now_ms`` (any shard)."""
        generation, mark = self.layout.dedup_generation(now_ms), fingerprint(event_id)
        keys = [self.layout.dedup(site, g) for g in (generation, generation - 1)]
        return any(client.sismember(key, mark) for client in self.shards for key in keys)

    def recorded_offsets(self, group: str) -> list[dict[str, int]]:
        """Each shard's record of ``group``'s next offsets (``topic:partition`` -> offset)."""
        return [
            {k.decode(): int(v) for k, v in client.hgetall(self.layout.offsets(group)).items()}
            for client in self.shards
        ]

    def stats(self) -> dict[str, int]:
        """The running totals (events, duplicates, late, invalid...), summed over the shards."""
        totals: dict[str, int] = {}
        for client in self.shards:
            for name, value in client.hgetall(self.layout.stats).items():
                key = name.decode(errors="replace") if isinstance(name, bytes) else name
                try:
                    totals[key] = totals.get(key, 0) + int(value)
                except ValueError:  # a stray field: the health panel still shows the rest
                    skip("stats field", (key, value))
        return totals

    def _args(self, batch: Batch, offsets: Offsets, group: str, now_ms: int, duplicates: int) -> list[object]:
        layout = self.layout
        args: list[object] = [layout.offsets(group), len(offsets)]
        for partition, (expected, following) in offsets.items():
            args += [partition, "" if expected is None else expected, following]
        generation = layout.dedup_generation(now_ms)
        chunks = [
            (site, marks[i : i + MARKS_CHUNK])
            for site, marks in batch.marks.items()
            for i in range(0, len(marks), MARKS_CHUNK)
        ]
        args.append(len(chunks))
        for site, marks in chunks:
            args += [layout.dedup(site, generation), layout.dedup(site, generation - 1)]
            args += [layout.dedup_expires_at(generation), b"".join(marks)]
        # Before anything else of this step touches the stats: do they show older counts?
        args += ["M", layout.hours_from, layout.stats, now_ms // HOUR_MS + 1]
        for (key, field), incr in batch.hincr.items():
            args += ["H", key, field, incr]
        for top, ops in _by_set(batch.values):
            first = ops[0]
            for start in range(0, len(ops), PFADD_CHUNK):
                chunk = ops[start : start + PFADD_CHUNK]
                entries: list[object] = []
                step = MARKS_CHUNK * VISITOR_CHARS
                for op in chunk:  # a value with very many visitors continues in entries adding 0 page views
                    for k in range(0, max(len(op.visitors), 1), step):
                        entries += [op.pageviews if k == 0 else 0, op.value, op.visitors[k : k + step]]
                args += ["W", top, first.cap, first.visitors_prefix, first.expire_at]
                args += [first.hour_marker, first.hour_prefix, first.hour_expire_at, len(entries) // 3, *entries]
        for (count_key, amount_key), amounts in _by_pair(batch.amounts):
            for start in range(0, len(amounts), PFADD_CHUNK):
                chunk = amounts[start : start + PFADD_CHUNK]
                args += ["V", count_key, amount_key, chunk[0].cap, len(chunk)]
                for op in chunk:
                    args += [op.count, op.amount, op.value]
        for key, members in batch.pfadd.items():
            ordered = sorted(members)
            for start in range(0, len(ordered), MARKS_CHUNK):
                args += ["P", key, "".join(ordered[start : start + MARKS_CHUNK])]
        last_seen: dict[str, list[str]] = {}
        for (key, member), score in batch.seen_at.items():
            last_seen.setdefault(key, []).append(f"{score:013d}{member}")
        for key, pairs in last_seen.items():
            for start in range(0, len(pairs), MARKS_CHUNK // 2):
                args += ["A", key, "".join(pairs[start : start + MARKS_CHUNK // 2])]
        for key, when in batch.expire_at.items():
            args += ["E", key, when]
        # Last-seen sets only need the concurrency window; older members are dropped.
        for key in {key for key, _ in batch.seen_at}:
            args += ["T", key, now_ms - 2 * ACTIVE_WINDOW_MS]
        stats = layout.stats
        args += ["H", stats, "events", batch.events, "H", stats, "late", batch.late]
        if duplicates:
            args += ["H", stats, "duplicates", duplicates]
        return args


# What the Redis client raises when the server is away or refuses: callers that report which
# store failed test against it without importing the client themselves.
ERRORS: tuple[type[Exception], ...] = (redis.RedisError,)
# Of those, the ones that mean it is away or too slow (not a refused command): its breaker opens.
UNAVAILABLE: tuple[type[Exception], ...] = (redis.ConnectionError, redis.TimeoutError)


def redis_ping(url: str, timeout_s: float) -> Ping[redis.Redis]:
    """A :class:`footfall.ping.Ping` of the Redis at ``url``, answering within ``timeout_s``."""
    return Ping(
        lambda: redis.Redis.from_url(url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s),
        lambda client: client.ping(),
        ERRORS,
    )
