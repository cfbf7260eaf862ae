"""Reads of the realtime counters, for the query layer (no HTTP here).

Every function takes validated arguments (dimension names from
:data:`footfall.vocabulary.EVENT_DIMENSIONS`, integer times) and reads with one pipelined round trip
where it can. Times are milliseconds, UTC; ranges are half-open ``[start, end)`` and
rounded to whole minutes (the store's resolution).

Visitors over a range are HyperLogLog merges (PFCOUNT over many keys): each visitor counted
once per range, within HLL's ~0.81 % standard error — never a sum of per-minute uniques.
With several Redis shards every read goes to each of them and the answers are merged
(:mod:`realtime.fanout`).
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from cachetools import LRUCache, TTLCache

from footfall.goals import EVENT_NAME, PAGE, GoalSpec
from footfall.revenue import RevenueSums
from footfall.unreadable import skip
from footfall.vocabulary import (
    ENGAGEMENT_DIMENSIONS,
    EVENT_COUNT_DIMENSIONS,
    EVENT_DIMENSIONS,
    INTERVAL_MINUTES,
    PROP_SEPARATOR,
    REALTIME_METRICS,
    REFPAGE_SEPARATOR,
    VALUE_OTHER,
    QueryError,
)
from realtime.fanout import FanoutPipeline as Pipeline
from realtime.keys import ACTIVE_WINDOW_MS, HOUR_MS, MERGE_DELAY_MS, MERGED
from realtime.store import CounterStore
from realtime.trends import Rising, active_blocks, rank_rising

T = TypeVar("T")
# A read queued on a pipeline: takes the pipeline's answers (an iterator, in queue order),
# consumes exactly its own, and returns the parsed value. Queuing several reads before one
# execute() is how a view that needs many of them costs one round trip.
Parse = Callable[[Iterator[Any]], T]

COUNTER_FIELDS = ("pageviews", "events", "bot_events")
EVENT_TOTAL_FIELDS = ("custom_events", "engaged_ms", "engagements")
MAX_MINUTES = 60 * 24 * 7  # the store keeps far less; this bounds a query's key count
# Trend baselines remembered per process (values summed over all blocks held); see
# RealtimeQueries._queue_rising.
BASELINE_MEMORY_ITEMS = 200_000
BlockKey = tuple[str, str, int, int, int]  # site, dimension, minute of the read, first minute, minutes
# Hours of a site whose value sketches are merged on every shard (realtime.keys, Value hours),
# remembered per process: an hour stays merged (a rebuild deletes its sketches and merges them
# again, so a reader that remembers one reads partial sketches only while the rebuild runs, as
# it does every other count of those hours). Hours found not merged yet are asked again after
# UNMERGED_RECHECK_S: the workers merge an hour a few minutes after it ends.
MERGED_HOURS_ITEMS = 100_000
UNMERGED_RECHECK_S = 30.0


@dataclass(frozen=True, slots=True)
class Row:
    """A value with its page views and visitors; ``visitors`` is None where the speed layer
    cannot tell them (the ``(other)`` row of one referrer's pages, see :meth:`RealtimeQueries.pairs`)."""

    value: str
    pageviews: int
    visitors: int | None


@dataclass(frozen=True, slots=True)
class EventRow:
    """A custom event name, or a value of one of its properties, with its events and visitors."""

    value: str
    events: int
    visitors: int


@dataclass(frozen=True, slots=True)
class GoalCount:
    """A goal's total conversions (exact) and unique conversions (visitors, HyperLogLog)."""

    conversions: int
    visitors: int


@dataclass(frozen=True, slots=True)
class Engagement:
    """Engaged milliseconds and the engagement reports that carried them."""

    engaged_ms: int
    reports: int


@dataclass(frozen=True, slots=True)
class Trend:
    """A z-score read by :meth:`RealtimeQueries.trend`: the strongest value (``value`` ""
    for the whole site), None when nothing was counted; ``active_blocks`` of the baseline's
    ``blocks`` had any hit of the site (the detector needs 3 before it judges anything)."""

    rising: Rising | None
    active_blocks: int
    blocks: int


@dataclass(frozen=True, slots=True)
class LiveView:
    """What the live view shows, read by :meth:`RealtimeQueries.live` in two round trips."""

    pageviews_per_minute: list[tuple[int, int]]
    totals: dict[str, int]
    concurrent: int
    top_pages: list[Row]
    top_referrers: list[Row]
    rising_pages: list[Rising]
    rising_referrers: list[Rising]
    flows: list[tuple[str, str, int]]


def _minutes(start_ms: int, end_ms: int) -> range:
    if end_ms <= start_ms:
        raise QueryError("to", "must be after from")
    first, last = start_ms // 60_000, -(-end_ms // 60_000)
    if last - first > MAX_MINUTES:
        raise QueryError("from", f"realtime ranges span at most {MAX_MINUTES // 1440} days")
    return range(first, last)


def _split_hours(minutes: range, hours_from: int | None) -> tuple[range, list[int]]:
    """The whole UTC hours inside ``minutes`` that hour keys answer (from ``hours_from`` on;
    none when it is unknown), and the minutes left for minute keys."""
    if hours_from is None:
        return range(0), list(minutes)
    first, stop = max(-(-minutes.start // 60), hours_from), minutes.stop // 60
    if stop <= first:
        return range(0), list(minutes)
    return range(first, stop), [*range(minutes.start, first * 60), *range(stop * 60, minutes.stop)]


def _check_dim(dim: str, parameter: str = "dimension") -> None:
    if dim not in EVENT_DIMENSIONS:
        raise QueryError(parameter, f"must be one of {', '.join(EVENT_DIMENSIONS)}")


def _check_engagement_dim(dim: str) -> None:
    if dim not in ENGAGEMENT_DIMENSIONS:
        raise QueryError("dimension", f"engaged time is counted per {' and '.join(ENGAGEMENT_DIMENSIONS)} only")


def _prop_prefix(event: str, prop: str) -> str:
    """The start of the ``event_prop`` values of ``event``'s property ``prop`` (realtime.keys)."""
    if not EVENT_NAME.match(event):
        raise QueryError("event", "must be an event name (letters, digits, _.:-, at most 64)")
    if not prop or PROP_SEPARATOR in prop:
        raise QueryError("property", "must be a property name")
    return f"{event}{PROP_SEPARATOR}{prop}{PROP_SEPARATOR}"


def _goal_value(goal: GoalSpec) -> tuple[str, str]:
    """The dimension and value that count an event goal's conversions."""
    if goal.prop:
        return "event_prop", f"{goal.event}{PROP_SEPARATOR}{goal.prop}{PROP_SEPARATOR}{goal.value}"
    return "event", goal.event


def _decoded(member: bytes | str, kind: str = "member") -> str | None:
    """A sorted set's member as text; None (skipped and counted) when it is not UTF-8."""
    if isinstance(member, str):
        return member
    try:
        return member.decode()
    except UnicodeDecodeError:
        skip(kind, member)
        return None


def _num(raw: object) -> int:
    """A stored count; 0 for none, and 0 (skipped and counted) for anything not a number."""
    if raw is None:
        return 0
    try:
        return int(float(raw))  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        skip("count", raw)
        return 0


def _marker(raw: object, kind: str) -> int | None:
    """A stored marker's whole number; None (skipped and counted) when it is not one."""
    try:
        return int(raw)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        skip(kind, raw)
        return None


def _scores(answer: Iterator[tuple[bytes | str, float]], kind: str) -> Iterator[tuple[str, int]]:
    """A ZUNION's ``(member, score)`` pairs as text and whole numbers, unreadable members skipped."""
    for member, score in answer:
        value = _decoded(member, kind)
        if value is not None:
            yield value, _num(score)


class RealtimeQueries:
    """Each public read is one round trip (``top`` two), built from ``_queue_*`` helpers that
    queue commands on a pipeline and return a :data:`Parse` for their answers; a read of a
    value's visitors takes one more when the range holds closed hours whose value sketches
    this object does not know merged or not yet (:meth:`merged_hours`)."""

    def __init__(self, store: CounterStore, baseline_memory_items: int = BASELINE_MEMORY_ITEMS) -> None:
        """``baseline_memory_items``: how many summed values of trend-baseline blocks this
        object may remember (0: none, every trend read sums every block in Redis)."""
        self.store = store
        self.client = store.client
        self.clients = store.shards  # every read goes to each shard (realtime.fanout)
        self.layout = store.layout
        self._hours_from: int | None = None
        self._baselines: LRUCache | None = (
            LRUCache(maxsize=baseline_memory_items, getsizeof=lambda block: len(block) + 1)
            if baseline_memory_items > 0
            else None
        )
        self._baselines_lock = threading.Lock()  # LRUCache is not thread-safe; gthread workers share this
        self._merged: LRUCache[tuple[str, int], bool] = LRUCache(maxsize=MERGED_HOURS_ITEMS)
        self._unmerged: TTLCache[tuple[str, int], bool] = TTLCache(MERGED_HOURS_ITEMS, UNMERGED_RECHECK_S)
        self._merged_lock = threading.Lock()

    def hours_from(self) -> int | None:
        """The first UTC hour whose hour keys are complete (see :mod:`realtime.keys`), None
        while no batch has set it. Read once per process: it only changes from unset to set
        (after a loss of Redis's data it may be set lower, and a higher one is still safe)."""
        if self._hours_from is None:
            (raw,) = Pipeline(self.clients).get_largest(self.layout.hours_from).execute()
            self._hours_from = None if raw is None else _marker(raw, "hours_from marker")
        return self._hours_from

    def _bucket_keys(self, minutes: range, by_hour: Callable[[int], str], by_minute: Callable[[int], str]) -> list[str]:
        """The keys that cover ``minutes``: one per whole hour the hour keys answer, one per
        minute left over."""
        hours, rest = _split_hours(minutes, self.hours_from())
        return [*map(by_hour, hours), *map(by_minute, rest)]

    def _counter_keys(self, site: str, minutes: range) -> list[str]:
        layout = self.layout
        return self._bucket_keys(minutes, lambda h: layout.hour_counters(site, h), lambda m: layout.counters(site, m))

    def _visitor_keys(self, site: str, minutes: range) -> list[str]:
        layout = self.layout
        return self._bucket_keys(minutes, lambda h: layout.hour_visitors(site, h), lambda m: layout.visitors(site, m))

    def _top_keys(self, site: str, minutes: range, dim: str) -> list[str]:
        layout = self.layout
        return self._bucket_keys(minutes, lambda h: layout.hour_top(site, h, dim), lambda m: layout.top(site, m, dim))

    def merged_hours(self, site: str, minutes: range, now_ms: int | None = None) -> list[int]:
        """The whole UTC hours inside ``minutes`` whose value sketches every shard has merged
        (realtime.keys, Value hours), ascending. Reads the markers of the closed hours not
        known yet, in one round trip (none when all are known)."""
        hours = range(-(-minutes.start // 60), minutes.stop // 60)
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        closed = range(hours.start, min(hours.stop, max((now_ms - MERGE_DELAY_MS) // HOUR_MS, hours.start)))
        with self._merged_lock:
            unknown = [h for h in closed if (site, h) not in self._merged and (site, h) not in self._unmerged]
        if unknown:
            pipe = Pipeline(self.clients)
            for hour in unknown:
                pipe.get_least(self.layout.hour_merged(site, hour))
            states = pipe.execute()
            with self._merged_lock:
                for hour, state in zip(unknown, states, strict=True):
                    done = state is not None and _marker(state, "merged marker") == int(MERGED)
                    (self._merged if done else self._unmerged)[(site, hour)] = True
        with self._merged_lock:
            return [h for h in closed if (site, h) in self._merged]

    def _dim_visitor_keys(self, site: str, minutes: range, dim: str, value: str) -> list[str]:
        """The sketches of a value's visitors over ``minutes``: one per merged hour, one per
        minute left over (same registers, so the same estimate, as every minute's)."""
        layout, merged = self.layout, self.merged_hours(site, minutes)
        keys = [layout.hour_dim_visitors(site, h, dim, value) for h in merged]
        covered = set(merged)
        return [*keys, *(layout.dim_visitors(site, m, dim, value) for m in minutes if m // 60 not in covered)]

    def _run(self, queue: Callable[[Pipeline], Parse[T]]) -> T:
        pipe = Pipeline(self.clients)
        parse = queue(pipe)
        return parse(iter(pipe.execute()))

    # -- time series and totals ------------------------------------------------------------

    def timeseries(
        self,
        site: str,
        metric: str,
        start_ms: int,
        end_ms: int,
        interval: str = "minute",
        filter_: tuple[str, str] | None = None,
    ) -> list[tuple[int, int]]:
        """``[(bucket start ms, value)]`` for every bucket of the range, zeros included."""
        return self._run(lambda pipe: self._queue_timeseries(pipe, site, metric, start_ms, end_ms, interval, filter_))

    def _queue_timeseries(
        self,
        pipe: Pipeline,
        site: str,
        metric: str,
        start_ms: int,
        end_ms: int,
        interval: str,
        filter_: tuple[str, str] | None,
    ) -> Parse[list[tuple[int, int]]]:
        if metric not in REALTIME_METRICS:
            raise QueryError("metric", f"must be one of {', '.join(REALTIME_METRICS)}")
        if interval not in INTERVAL_MINUTES:
            raise QueryError("interval", f"must be one of {', '.join(INTERVAL_MINUTES)}")
        if filter_ is not None:
            _check_dim(filter_[0], "filters")
            if metric in {"events", "bot_events"}:
                raise QueryError("filters", f"{metric} cannot be filtered by a page view dimension")
        step = INTERVAL_MINUTES[interval]
        minutes = _minutes(start_ms, end_ms)
        buckets = [
            range(m, min(m - m % step + step, minutes.stop)) for m in minutes if m == minutes.start or m % step == 0
        ]
        values = self._queue_ranges(pipe, site, metric, buckets, filter_)
        return lambda raw: [(bucket.start * 60_000, value) for bucket, value in zip(buckets, values(raw), strict=True)]

    def _queue_ranges(
        self, pipe: Pipeline, site: str, metric: str, ranges: Sequence[range], filter_: tuple[str, str] | None
    ) -> Parse[list[int]]:
        """``metric`` of each range of minutes, whole hours read from hour keys; visitors of a
        range are one HyperLogLog merge."""
        if metric == "visitors":
            for minutes in ranges:
                if filter_:
                    pipe.pfcount(*self._dim_visitor_keys(site, minutes, *filter_))
                else:
                    pipe.pfcount(*self._visitor_keys(site, minutes))
            return lambda raw: [_num(next(raw)) for _ in ranges]
        if filter_:
            top_groups = [self._top_keys(site, minutes, filter_[0]) for minutes in ranges]
            for keys in top_groups:
                for key in keys:
                    pipe.zscore(key, filter_[1])
            return lambda raw: [sum(_num(next(raw)) for _ in keys) for keys in top_groups]
        key_groups = [self._counter_keys(site, minutes) for minutes in ranges]
        for keys in key_groups:
            for key in keys:
                if metric == "events":
                    pipe.hmget(key, "events", "bot_events")
                else:
                    pipe.hget(key, metric)
        if metric == "events":  # the counters' events include bots; the metric is the rest

            def humans(raw: Iterator[Any]) -> list[int]:
                return [sum(_num(e) - _num(b) for e, b in (next(raw) for _ in keys)) for keys in key_groups]

            return humans
        return lambda raw: [sum(_num(next(raw)) for _ in keys) for keys in key_groups]

    def spans(
        self, site: str, metric: str, spans: list[tuple[int, int]], filter_: tuple[str, str] | None = None
    ) -> list[int]:
        """``metric`` for each ``[start, end)`` span (minute-aligned ms) in one pipelined round trip.

        The general form of :meth:`timeseries`, for buckets that are not whole UTC hours (local
        days, hours of half-hour time zones). Visitors of a span are one HLL merge."""
        if metric not in {"pageviews", "visitors"}:
            raise QueryError("metric", "must be pageviews or visitors")
        if filter_ is not None:
            _check_dim(filter_[0], "filters")
        ranges = [_minutes(start, end) for start, end in spans]
        if not ranges:
            return []
        return self._run(lambda pipe: self._queue_ranges(pipe, site, metric, ranges, filter_))

    def totals(self, site: str, start_ms: int, end_ms: int) -> dict[str, int]:
        """Page views, events (bots excluded), bot events and unique visitors of the range."""
        return self._run(lambda pipe: self._queue_totals(pipe, site, start_ms, end_ms))

    def _queue_totals(self, pipe: Pipeline, site: str, start_ms: int, end_ms: int) -> Parse[dict[str, int]]:
        minutes = _minutes(start_ms, end_ms)
        keys = self._counter_keys(site, minutes)
        for key in keys:
            pipe.hmget(key, *COUNTER_FIELDS)
        pipe.pfcount(*self._visitor_keys(site, minutes))

        def parse(raw: Iterator[Any]) -> dict[str, int]:
            rows = [next(raw) for _ in keys]
            visitors = next(raw)
            pv = sum(_num(r[0]) for r in rows)
            bots = sum(_num(r[2]) for r in rows)
            events = sum(_num(r[1]) for r in rows) - bots
            return {"pageviews": pv, "events": events, "bot_events": bots, "visitors": int(visitors)}

        return parse

    # -- rankings --------------------------------------------------------------------------

    def ranking(
        self,
        site: str,
        dim: str,
        start_ms: int,
        end_ms: int,
        limit: int = 10,
        *,
        rest_as_other: bool = False,
    ) -> list[tuple[str, int]]:
        """The ``limit`` values of ``dim`` with most page views in the range, as ``(value, page views)``.

        With ``rest_as_other`` the values left out are added to the ``(other)`` row (see
        :func:`top_values`), so the rows add up to the range's page views. No visitors: those
        cost a PFCOUNT over the value's sketches (:meth:`visitors`), so callers count them only
        for the rows they show."""
        return self._run(lambda pipe: self._queue_ranking(pipe, site, dim, start_ms, end_ms, limit, rest_as_other))

    def _queue_ranking(
        self,
        pipe: Pipeline,
        site: str,
        dim: str,
        start_ms: int,
        end_ms: int,
        limit: int,
        rest_as_other: bool = False,
    ) -> Parse[list[tuple[str, int]]]:
        _check_dim(dim)
        if not 1 <= limit <= 1000:
            raise QueryError("limit", "must be between 1 and 1000")
        minutes = _minutes(start_ms, end_ms)
        # One ZUNION sums the minutes' sorted sets inside Redis instead of shipping every
        # minute's members here to be summed (whole hours are one key each).
        pipe.zunion(self._top_keys(site, minutes, dim), withscores=True)

        def parse(raw: Iterator[Any]) -> list[tuple[str, int]]:
            return top_values(dict(_scores(next(raw), f"{dim} value")), limit, rest_as_other)

        return parse

    def other_count(self, site: str, dim: str, start_ms: int, end_ms: int) -> int:
        """What the range counted under ``(other)`` in ``dim`` (page views; events for the
        custom event dimensions): the values past the buckets' caps."""
        if dim not in EVENT_COUNT_DIMENSIONS:
            _check_dim(dim)
        keys = self._top_keys(site, _minutes(start_ms, end_ms), dim)
        pipe = Pipeline(self.clients)
        for key in keys:
            pipe.zscore(key, VALUE_OTHER)
        return sum(_num(score) for score in pipe.execute())

    def visitors(self, site: str, dim: str, start_ms: int, end_ms: int, values: Sequence[str]) -> list[int]:
        """Unique visitors (HyperLogLog) of each of ``values`` of ``dim`` over the range, in one round trip."""
        if not values:
            _check_dim(dim)
            return []
        return self._run(lambda pipe: self._queue_visitors(pipe, site, dim, start_ms, end_ms, values))

    def _queue_visitors(
        self, pipe: Pipeline, site: str, dim: str, start_ms: int, end_ms: int, values: Sequence[str]
    ) -> Parse[list[int]]:
        _check_dim(dim)
        minutes = _minutes(start_ms, end_ms)
        for value in values:
            pipe.pfcount(*self._dim_visitor_keys(site, minutes, dim, value))
        return lambda raw: [int(next(raw)) for _ in values]

    def top(self, site: str, dim: str, start_ms: int, end_ms: int, limit: int = 10) -> list[Row]:
        """The ``limit`` values of ``dim`` with most page views in the range, with visitors."""
        ranked = self.ranking(site, dim, start_ms, end_ms, limit)
        visitors = self.visitors(site, dim, start_ms, end_ms, [value for value, _ in ranked])
        return _rows(ranked, visitors)

    def pairs(
        self, site: str, start_ms: int, end_ms: int, limit: int = 10, *, ref: str | None = None, path: str | None = None
    ) -> list[tuple[str, str | None, int]]:
        """The pages the referrer ``ref`` drives traffic to (or, with ``path``, the referrers of
        that page), ranked by page views, ``limit`` at most: ``(page or referrer, its
        referrer→page value, page views)``.

        Pairs a bucket counted under ``(other)`` (past its cap, see :mod:`realtime.keys`) name
        no referrer or page, so those of ``ref`` (``path``) are one row :data:`VALUE_OTHER`
        without a value: ``ref``'s page views in its own dimension less those its held pairs
        carry (none when that is not positive), plus the pairs beyond ``limit``. So the rows add
        up to the referrer's (page's) page views, as a breakdown's rows do. One round trip."""
        if (ref is None) == (path is None):
            raise QueryError("dimension", "pairs are of one referrer or of one page")
        if not 1 <= limit <= 1000:
            raise QueryError("limit", "must be between 1 and 1000")
        minutes = _minutes(start_ms, end_ms)
        own_dim, own_value = ("ref", ref) if ref is not None else ("page", path)
        pipe = Pipeline(self.clients)
        pipe.zunion(self._top_keys(site, minutes, "refpage"), withscores=True)
        own_keys = self._top_keys(site, minutes, own_dim)
        for key in own_keys:
            pipe.zscore(key, own_value)
        raw = iter(pipe.execute())
        pairs = _scores(next(raw), "refpage value")
        if ref is not None:
            prefix = f"{ref}{REFPAGE_SEPARATOR}"
            held = [(v.removeprefix(prefix), v, n) for v, n in pairs if v.startswith(prefix)]
        else:
            suffix = f"{REFPAGE_SEPARATOR}{path}"
            held = [(v.removesuffix(suffix), v, n) for v, n in pairs if v.endswith(suffix)]
        own = sum(_num(next(raw)) for _ in own_keys)
        counts = {shown: n for shown, _, n in held}
        members = {shown: member for shown, member, _ in held}
        if (rest := own - sum(counts.values())) > 0:
            counts[VALUE_OTHER] = rest
        # The rows left out are added to (other) too, so the rows still add up.
        return [(shown, members.get(shown), n) for shown, n in top_values(counts, limit, rest_as_other=True)]

    def referrer_pages(self, site: str, ref_domain: str, start_ms: int, end_ms: int, limit: int = 10) -> list[Row]:
        """Which pages the referrer ``ref_domain`` (``(direct)`` for none) drives traffic to
        (:meth:`pairs`; the ``(other)`` row's visitors are None)."""
        return self._pair_rows(site, start_ms, end_ms, self.pairs(site, start_ms, end_ms, limit, ref=ref_domain))

    def page_referrers(self, site: str, path: str, start_ms: int, end_ms: int, limit: int = 10) -> list[Row]:
        """Which referrers drive traffic to ``path`` (:meth:`pairs`; the ``(other)`` row's visitors are None)."""
        return self._pair_rows(site, start_ms, end_ms, self.pairs(site, start_ms, end_ms, limit, path=path))

    def _pair_rows(self, site: str, start_ms: int, end_ms: int, pairs: list[tuple[str, str | None, int]]) -> list[Row]:
        members = [member for _, member, _ in pairs if member is not None]
        visitors = iter(self.visitors(site, "refpage", start_ms, end_ms, members))
        return [Row(shown, pv, None if member is None else next(visitors)) for shown, member, pv in pairs]

    def flows(self, site: str, start_ms: int, end_ms: int, limit: int = 50) -> list[tuple[str, str, int]]:
        """Top referrer→page pairs ``(referrer, page, page views)`` (for a Sankey diagram):
        page views only, so no visitor counts (a PFCOUNT per pair) are read. The pairs
        counted under ``(other)`` are one flow from referrer ``(other)`` to page ``(other)``."""
        return _flows(self.ranking(site, "refpage", start_ms, end_ms, limit))

    def concurrent(self, site: str, now_ms: int) -> int:
        """Visitors with an event in the last five minutes (event time)."""
        return self._run(lambda pipe: self._queue_concurrent(pipe, site, now_ms))

    def _queue_concurrent(self, pipe: Pipeline, site: str, now_ms: int) -> Parse[int]:
        pipe.zcount(self.layout.active(site), now_ms - ACTIVE_WINDOW_MS, "+inf")
        return lambda raw: int(next(raw))

    def rising(
        self, site: str, dim: str, now_ms: int, recent_minutes: int = 10, baseline_minutes: int = 180, limit: int = 10
    ) -> list[Rising]:
        """Values of ``dim`` rising now against their own recent baseline (see :mod:`realtime.trends`)."""
        return self._run(
            lambda pipe: self._queue_rising(pipe, site, dim, now_ms, recent_minutes, baseline_minutes, limit)
        )

    def trend(
        self,
        site: str,
        dim: str,
        now_ms: int,
        recent_minutes: int,
        baseline_minutes: int,
        *,
        value: str | None = None,
        whole_site: bool = False,
    ) -> Trend:
        """The trend detector's z-score (:mod:`realtime.trends`) of the strongest value of
        ``dim`` now, of the one ``value``, or of the whole site's page views (``whole_site``,
        read from the ``page`` counters), however small: unlike :meth:`rising` nothing is
        left out for being noise. One round trip."""
        if whole_site and value is not None:
            raise QueryError("value", "a trend is of the whole site or of one value, not both")

        def rank(recent: dict[str, int], baseline: dict[str, list[int]], blocks: int) -> Trend:
            if whole_site:
                recent = {"": sum(recent.values())}
                baseline = {"": [sum(hits[i] for hits in baseline.values()) for i in range(blocks)]}
            elif value is not None:
                recent = {value: recent.get(value, 0)}
            found = rank_rising(recent, baseline, blocks, min_recent=0, limit=1, min_z=-math.inf)
            return Trend(found[0] if found else None, len(active_blocks(baseline, blocks)), blocks)

        return self._run(
            lambda pipe: self._queue_rising(pipe, site, dim, now_ms, recent_minutes, baseline_minutes, rank=rank)
        )

    def _queue_rising(
        self,
        pipe: Pipeline,
        site: str,
        dim: str,
        now_ms: int,
        recent_minutes: int = 10,
        baseline_minutes: int = 180,
        limit: int = 10,
        rank: Callable[[dict[str, int], dict[str, list[int]], int], T] | None = None,
    ) -> Parse[list[Rising]] | Parse[T]:
        _check_dim(dim)
        if baseline_minutes % recent_minutes:
            raise QueryError("baseline_minutes", "must be a multiple of recent_minutes")
        end = now_ms // 60_000
        first = end - recent_minutes - baseline_minutes
        blocks = baseline_minutes // recent_minutes
        # One ZUNION per block of ``recent_minutes`` sums that block's minutes inside Redis:
        # 19 short answers instead of 190 whole sorted sets. The baseline blocks are whole
        # past minutes, so their sums are remembered and reused by every read in the same
        # minute (the key holds the minute): most reads of the live view, polled every few
        # seconds by each open dashboard, then sum only the recent block. A late event (a
        # spool replayed after an outage) reaches a baseline at most a minute late.
        keys = [(site, dim, end, first + block * recent_minutes, recent_minutes) for block in range(blocks + 1)]
        known = [*self._remembered(keys[:blocks]), None]
        for key, block in zip(keys, known, strict=True):
            if block is None:
                minutes = range(key[3], key[3] + recent_minutes)
                pipe.zunion([self.layout.top(site, m, dim) for m in minutes], withscores=True)

        def parse(raw: Iterator[Any]) -> Any:
            sums: list[dict[str, int]] = []
            for index, (key, block) in enumerate(zip(keys, known, strict=True)):
                if block is None:
                    block = dict(_scores(next(raw), f"{dim} value"))
                    if index < blocks:
                        self._remember(key, block)
                sums.append(block)
            baseline: dict[str, list[int]] = defaultdict(lambda: [0] * blocks)
            for index, block in enumerate(sums[:blocks]):
                for value, hits in block.items():
                    baseline[value][index] = hits
            if rank is not None:
                return rank(sums[blocks], dict(baseline), blocks)
            return rank_rising(sums[blocks], baseline, blocks, limit=limit)

        return parse

    def _remembered(self, keys: list[BlockKey]) -> list[dict[str, int] | None]:
        if self._baselines is None:
            return [None] * len(keys)
        with self._baselines_lock:
            return [self._baselines.get(key) for key in keys]

    def _remember(self, key: BlockKey, block: dict[str, int]) -> None:
        if self._baselines is not None:
            with self._baselines_lock:
                self._baselines[key] = block

    # -- custom events, goals and engaged time -----------------------------------------------

    def custom_events(
        self, site: str, start_ms: int, end_ms: int, limit: int = 10, *, rest_as_other: bool = False
    ) -> list[EventRow]:
        """The ``limit`` custom events with most events in the range, with unique visitors (two
        round trips: the visitors of the names ranked). Names past a minute's cap are counted
        under ``(other)``, which is ranked like a name; with ``rest_as_other`` so are the names
        left out (:func:`top_values`; the row's visitors are then those past the caps only)."""
        return self._event_rows(site, "event", "", start_ms, end_ms, limit, rest_as_other)

    def event_properties(
        self,
        site: str,
        event: str,
        prop: str,
        start_ms: int,
        end_ms: int,
        limit: int = 10,
        *,
        rest_as_other: bool = False,
    ) -> list[EventRow]:
        """The ``limit`` values of custom event ``event``'s property ``prop`` with most events in
        the range (values as :func:`footfall.goals.prop_text` writes them), with unique visitors;
        with ``rest_as_other`` the values left out are summed in one ``(other)`` row.

        Values a minute counted under ``(other)`` (past its cap, see :mod:`realtime.keys`) belong
        to no event, so the rows may add up to fewer events than the event had."""
        return self._event_rows(site, "event_prop", _prop_prefix(event, prop), start_ms, end_ms, limit, rest_as_other)

    def _event_rows(
        self, site: str, dim: str, prefix: str, start_ms: int, end_ms: int, limit: int, rest_as_other: bool = False
    ) -> list[EventRow]:
        if not 1 <= limit <= 1000:
            raise QueryError("limit", "must be between 1 and 1000")
        minutes = _minutes(start_ms, end_ms)
        ranked = self._run(lambda pipe: self._queue_union(pipe, self._top_keys(site, minutes, dim), prefix))
        top = top_values(ranked, limit, rest_as_other)
        pipe = Pipeline(self.clients)
        for value, _ in top:
            pipe.pfcount(*self._dim_visitor_keys(site, minutes, dim, prefix + value))
        visitors = pipe.execute() if top else []
        return [EventRow(value, n, int(uv)) for (value, n), uv in zip(top, visitors, strict=True)]

    def _queue_union(self, pipe: Pipeline, keys: list[str], prefix: str = "") -> Parse[dict[str, int]]:
        """The summed scores of ``keys``' members that start with ``prefix``, without it."""
        pipe.zunion(keys, withscores=True)

        def parse(raw: Iterator[Any]) -> dict[str, int]:
            sums = _scores(next(raw), "value")
            return {value.removeprefix(prefix): n for value, n in sums if value.startswith(prefix)}

        return parse

    def goal_counts(self, site: str, goals: Sequence[GoalSpec], start_ms: int, end_ms: int) -> dict[str, GoalCount]:
        """Conversions and unique conversions of each goal over the range, by ``goal_id``.

        Page goals: the page views of the ``page`` values that match the goal's pattern, and
        one HyperLogLog merge of those values' minute sketches. Event goals: the ``event``
        value of the name, or the ``event_prop`` value of name, property and value. Goals are
        matched when read, so a goal defined now answers for every minute the store holds.
        Values a minute counted under ``(other)`` (past its cap, realtime.keys) match no
        goal: on a site with more distinct pages or event values a minute than the cap, a
        goal's realtime counts can be short until the nightly rollup settles the day.
        One round trip, two with page goals (their matching values come first), plus one to
        read which hours are merged when some are not known yet (:meth:`merged_hours`). A page
        goal's merge reads one sketch per matching value and merged hour of the range, and per
        minute of the rest (the open hour, the hours not merged yet, the range's ragged ends)."""
        minutes = _minutes(start_ms, end_ms)
        pipe = Pipeline(self.clients)
        pages = self._queue_union(pipe, self._top_keys(site, minutes, "page")) if any(
            g.kind == PAGE for g in goals
        ) else None  # fmt: skip
        event_goals = [(goal, *_goal_value(goal)) for goal in goals if goal.kind != PAGE]
        bucket_keys = [self._top_keys(site, minutes, dim) for _, dim, _ in event_goals]
        for (_, dim, value), keys in zip(event_goals, bucket_keys, strict=True):
            for key in keys:
                pipe.zscore(key, value)
            pipe.pfcount(*self._dim_visitor_keys(site, minutes, dim, value))
        raw = iter(pipe.execute()) if len(pipe) else iter(())
        page_views = pages(raw) if pages is not None else {}
        counts: dict[str, GoalCount] = {}
        for (goal, _, _), keys in zip(event_goals, bucket_keys, strict=True):
            conversions = sum(_num(next(raw)) for _ in keys)
            counts[goal.goal_id] = GoalCount(conversions, _num(next(raw)))
        matched: list[tuple[GoalSpec, list[str]]] = []
        for goal in goals:
            if goal.kind == PAGE:
                pattern = re.compile(goal.regex)
                matched.append((goal, [v for v in page_views if v != VALUE_OTHER and pattern.match(v)]))
        pipe = Pipeline(self.clients)
        for _, values in matched:
            if values:  # one merge over the sketches of every matching page
                pipe.pfcount(*(key for value in values for key in self._dim_visitor_keys(site, minutes, "page", value)))
        visitors = iter(pipe.execute()) if len(pipe) else iter(())
        for goal, values in matched:
            conversions = sum(page_views[value] for value in values)
            counts[goal.goal_id] = GoalCount(conversions, _num(next(visitors)) if values else 0)
        return counts

    def goal_revenue(self, site: str, goals: Sequence[GoalSpec], start_ms: int, end_ms: int) -> dict[str, RevenueSums]:
        """The revenue of each revenue goal over the range, by goal id (realtime.keys, Revenue), with
        ``without`` 0: conversions without revenue are the goal's conversions less those counted here.
        Values past a bucket's cap count as ``(other)``, which no goal reads. One round trip."""
        paid = [g for g in goals if g.has_revenue]
        if not paid:
            return {}
        minutes, layout = _minutes(start_ms, end_ms), self.layout
        pipe = Pipeline(self.clients)
        counts = self._queue_union(
            pipe,
            self._bucket_keys(minutes, lambda h: layout.hour_revenues(site, h), lambda m: layout.revenues(site, m)),
        )
        units = self._queue_union(pipe, self._bucket_keys(
            minutes, lambda h: layout.hour_revenue_units(site, h), lambda m: layout.revenue_units(site, m)
        ))  # fmt: skip
        raw = iter(pipe.execute())
        conversions, amounts = counts(raw), units(raw)
        out: dict[str, RevenueSums] = {}
        for goal in paid:
            sums = out[goal.goal_id] = RevenueSums()
            head = f"{goal.event}{PROP_SEPARATOR}{goal.revenue_prop}{PROP_SEPARATOR}"
            if goal.currency:
                if head in conversions:
                    sums.add(goal.currency, conversions[head], amounts.get(head, 0))
                continue
            named = f"{head}{goal.currency_prop}{PROP_SEPARATOR}"
            for value, n in conversions.items():
                if value.startswith(named):
                    sums.add(value[len(named) :], n, amounts.get(value, 0))
        return out

    def engagement(
        self, site: str, dim: str, start_ms: int, end_ms: int, values: Sequence[str] | None = None
    ) -> dict[str, Engagement]:
        """Engaged time and reports per value of ``dim`` (``page`` or ``ref``) over the range,
        of ``values`` only when given (a value without reports is left out). Time on page is
        ``engaged_ms`` over the page's page views. One round trip."""
        return self._run(lambda pipe: self._queue_engagement(pipe, site, dim, start_ms, end_ms, values))

    def _queue_engagement(
        self, pipe: Pipeline, site: str, dim: str, start_ms: int, end_ms: int, values: Sequence[str] | None
    ) -> Parse[dict[str, Engagement]]:
        _check_engagement_dim(dim)
        minutes, layout = _minutes(start_ms, end_ms), self.layout
        reports = self._queue_union(pipe, self._bucket_keys(
            minutes, lambda h: layout.hour_engagements(site, h, dim), lambda m: layout.engagements(site, m, dim)
        ))  # fmt: skip
        engaged = self._queue_union(pipe, self._bucket_keys(
            minutes, lambda h: layout.hour_engaged_ms(site, h, dim), lambda m: layout.engaged_ms(site, m, dim)
        ))  # fmt: skip
        wanted = None if values is None else set(values)

        def parse(raw: Iterator[Any]) -> dict[str, Engagement]:
            counts, sums = reports(raw), engaged(raw)
            return {
                value: Engagement(sums.get(value, 0), n)
                for value, n in counts.items()
                if wanted is None or value in wanted
            }

        return parse

    def event_totals(self, site: str, start_ms: int, end_ms: int) -> dict[str, int]:
        """Custom events, engaged milliseconds and engagement reports of the range (humans'),
        as ``{"custom_events", "engaged_ms", "engagements"}``."""
        return self._run(lambda pipe: self._queue_event_totals(pipe, site, start_ms, end_ms))

    def _queue_event_totals(self, pipe: Pipeline, site: str, start_ms: int, end_ms: int) -> Parse[dict[str, int]]:
        keys = self._counter_keys(site, _minutes(start_ms, end_ms))
        for key in keys:
            pipe.hmget(key, *EVENT_TOTAL_FIELDS)

        def parse(raw: Iterator[Any]) -> dict[str, int]:
            rows = [next(raw) for _ in keys]
            return {name: sum(_num(row[i]) for row in rows) for i, name in enumerate(EVENT_TOTAL_FIELDS)}

        return parse

    # -- the live view ---------------------------------------------------------------------

    def live(self, site: str, start_ms: int, end_ms: int, now_ms: int, limit: int = 10, flows: int = 40) -> LiveView:
        """Everything the live view shows, in two round trips (the view is polled every few
        seconds by every open dashboard): the first reads counters, rankings and trend
        blocks, the second the visitors (HyperLogLog merges) of the top pages and referrers.
        Flows carry page views only, so their pairs cost no visitor reads."""
        pipe = Pipeline(self.clients)
        queued = (
            self._queue_timeseries(pipe, site, "pageviews", start_ms, end_ms, "minute", None),
            self._queue_totals(pipe, site, start_ms, end_ms),
            self._queue_concurrent(pipe, site, now_ms),
            self._queue_ranking(pipe, site, "page", start_ms, end_ms, limit),
            self._queue_ranking(pipe, site, "ref", start_ms, end_ms, limit),
            self._queue_ranking(pipe, site, "refpage", start_ms, end_ms, flows),
            self._queue_rising(pipe, site, "page", now_ms, limit=limit),
            self._queue_rising(pipe, site, "ref", now_ms, limit=limit),
        )
        raw = iter(pipe.execute())
        series, totals, concurrent, pages, refs, pairs, rising_pages, rising_refs = (parse(raw) for parse in queued)

        pipe = Pipeline(self.clients)
        queued_visitors = [
            self._queue_visitors(pipe, site, dim, start_ms, end_ms, [value for value, _ in ranked])
            for dim, ranked in (("page", pages), ("ref", refs))
        ]
        raw = iter(pipe.execute())
        page_uv, ref_uv = (parse(raw) for parse in queued_visitors)
        return LiveView(
            pageviews_per_minute=series,
            totals=totals,
            concurrent=concurrent,
            top_pages=_rows(pages, page_uv),
            top_referrers=_rows(refs, ref_uv),
            rising_pages=rising_pages,
            rising_referrers=rising_refs,
            flows=_flows(pairs),
        )


def top_values(counts: dict[str, int], limit: int, rest_as_other: bool = False) -> list[tuple[str, int]]:
    """The ``limit`` values with most counts, ties by value. With ``rest_as_other`` the counts
    of the values left out go to the ``(other)`` row (added when needed, still ``limit`` rows
    at most), so the rows add up to the whole: a ranking cut to a length stays exact."""
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    if not rest_as_other or len(ranked) <= limit:
        return ranked[:limit]
    shown = ranked[:limit]
    if all(value != VALUE_OTHER for value, _ in shown):
        shown = ranked[: limit - 1]
    rest = sum(n for value, n in ranked[len(shown) :])
    merged = dict(shown)
    merged[VALUE_OTHER] = merged.get(VALUE_OTHER, 0) + rest
    return sorted(merged.items(), key=lambda kv: (-kv[1], kv[0]))


def _rows(ranked: list[tuple[str, int]], visitors: list[int]) -> list[Row]:
    return [Row(value, pv, uv) for (value, pv), uv in zip(ranked, visitors, strict=True)]


def _flows(ranked: list[tuple[str, int]]) -> list[tuple[str, str, int]]:
    """Referrer→page values as ``(referrer, page, page views)``: ``(other)`` (the pairs past a
    bucket's cap) as a flow from ``(other)`` to ``(other)``; a value without the separator is
    skipped and counted (:mod:`footfall.unreadable`)."""
    flows = []
    for value, pageviews in ranked:
        if value == VALUE_OTHER:
            flows.append((VALUE_OTHER, VALUE_OTHER, pageviews))
            continue
        ref, separator, page = value.partition(REFPAGE_SEPARATOR)
        if separator:
            flows.append((ref, page, pageviews))
        else:
            skip("refpage value", value)
    return flows
