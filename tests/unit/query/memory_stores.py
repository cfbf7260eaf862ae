"""In-memory readers of both stores for unit tests of the merge (:mod:`query.stores`).

Both answer from one list of :class:`Hit` events, the way the real stores would after the
pipeline ran: :class:`MemoryRollups` holds the settled days' documents, as the rollup loads
them (exact, by site-local day and hour bucket); :class:`MemoryCounters` the speed layer's
counts of the events still inside its retention window (exact here, where Redis's visitors
are estimates). A test can then check a merged answer against the events themselves.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo

from footfall.goals import GoalSpec
from historical.buckets import day_buckets, ms
from historical.reads import merge_funnel
from query.stores import Engagement, EventRow, FunnelHistory, GoalCount, HourDocs, LiveView, Settlement, Sums

SITE = "shop"


@dataclass(frozen=True)
class Hit:
    """One human event of site :data:`SITE`."""

    at: dt.datetime
    path: str = "/"
    ref: str = "(direct)"
    visitor: str = "v1"
    type: str = "pageview"
    props: Mapping[str, object] = field(default_factory=dict)

    @property
    def ms(self) -> int:
        return ms(self.at)

    def value(self, dim: str) -> str:
        return {"page": self.path, "ref": self.ref}[dim]


def _distinct(hits: Iterable[Hit]) -> int:
    return len({h.visitor for h in hits})


class MemoryRollups:
    """:class:`query.stores.SettledReads` over the ``settled`` days' events, in zone ``tz``.

    ``goal_ids``: the goals each settled day was rolled up with (all of ``goals`` by default);
    ``funnels``: funnel id -> the day documents of ``rollup_funnels`` (their days settled)."""

    def __init__(
        self,
        tz: str,
        hits: Sequence[Hit],
        settled: Iterable[str],
        goals: Sequence[GoalSpec] = (),
        goal_ids: Mapping[str, Iterable[str]] | None = None,
        funnels: Mapping[str, Sequence[Mapping]] | None = None,
    ) -> None:
        self.zone = ZoneInfo(tz)
        self.settled = frozenset(settled)
        self.goals = list(goals)
        self.goal_ids = {d: frozenset(ids) for d, ids in (goal_ids or {}).items()}
        self.funnels = funnels or {}
        self.by_day: dict[str, list[Hit]] = defaultdict(list)
        for hit in hits:
            self.by_day[hit.at.astimezone(self.zone).date().isoformat()].append(hit)

    def _days(self, days: Iterable[str]) -> list[str]:
        return sorted(d for d in set(days) if d in self.settled)

    def _views(self, day: str) -> list[Hit]:
        return [h for h in self.by_day.get(day, []) if h.type == "pageview"]

    def settlement(self, site: str, since: str) -> Settlement:
        days = frozenset(d for d in self.settled if d >= since and site == SITE)
        goals = {d: self.goal_ids.get(d, frozenset(g.goal_id for g in self.goals)) for d in days}
        watermark = max(self.settled) if self.settled and site == SITE else None
        return Settlement(days, watermark, {d: "1" for d in days}, goals, days)

    def daily(self, site: str, days: Iterable[str]) -> dict[str, dict]:
        out = {}
        for day in self._days(days):
            views = self._views(day)
            # One session per visitor and day, a bounce when it has one page view.
            per_visitor = defaultdict(list)
            for h in views:
                per_visitor[h.visitor].append(h.ms)
            bounces = sum(1 for times in per_visitor.values() if len(times) == 1)
            duration = sum((max(t) - min(t)) / 1000 for t in per_visitor.values())
            sessions = len(per_visitor)
            out[day] = {
                "day": day, "pageviews": len(views), "visitors": sessions, "sessions": sessions, "bounces": bounces,
                "bounce_rate": bounces / sessions if sessions else 0.0,
                "visit_duration_s": duration / sessions if sessions else 0.0,
            }  # fmt: skip
        return out

    def hourly(self, site: str, tz: str, days: Iterable[str]) -> HourDocs:
        docs = {}
        for day in self._days(days):
            for bucket in day_buckets(dt.date.fromisoformat(day), self.zone):
                views = [h for h in self._views(day) if bucket.start_ms <= h.ms < ms(bucket.end)]
                docs[(day, bucket.start_ms)] = {"pageviews": len(views), "visitors": _distinct(views), "sessions": 0}
        return HourDocs(docs)

    def filtered_daily(self, site: str, dim: str, value: str, days: Iterable[str]) -> dict[str, dict]:
        out = {}
        for day in self._days(days):
            views = [h for h in self._views(day) if h.value(dim) == value]
            if views:
                out[day] = {"day": day, "pageviews": len(views), "visitors": _distinct(views)}
        return out

    def breakdown(
        self, site: str, dim: str, days: Iterable[str], *, ref: str | None = None, page: str | None = None
    ) -> dict[str, Sums]:
        out: dict[str, Sums] = {}
        for day in self._days(days):
            by_value: dict[str, list[Hit]] = defaultdict(list)
            for h in self._views(day):
                by_value[h.value(dim)].append(h)
            for value, views in by_value.items():
                out.setdefault(value, Sums()).add({"pageviews": len(views), "visitors": _distinct(views)})
        return out

    def goal_counts(self, site: str, days: Iterable[str]) -> dict[str, tuple[int, int]]:
        out: dict[str, tuple[int, int]] = {}
        for day in self._days(days):
            for goal_id, (events, visitors) in self._goal_day(day).items():
                before = out.get(goal_id, (0, 0))
                out[goal_id] = (before[0] + events, before[1] + visitors)
        return out

    def _goal_day(self, day: str) -> dict[str, tuple[int, int]]:
        counted = self.settlement(SITE, day).goals.get(day, frozenset())
        out = {}
        for goal in self.goals:
            hits = [h for h in self.by_day.get(day, []) if goal.matches(h.type, h.path, h.props)]
            if hits and goal.goal_id in counted:
                out[goal.goal_id] = (len(hits), _distinct(hits))
        return out

    def goal_days(self, site: str, goal_id: str, days: Iterable[str]) -> dict[str, tuple[int, int]]:
        found = {day: self._goal_day(day).get(goal_id) for day in self._days(days)}
        return {day: counts for day, counts in found.items() if counts}

    def funnel(self, site: str, funnel_id: str, days: Iterable[str]) -> FunnelHistory | None:
        wanted = set(self._days(days))
        docs = [doc for doc in self.funnels.get(funnel_id, ()) if doc["day"] in wanted]
        return merge_funnel(docs) if docs else None

    def event_properties(self, site: str, event: str, prop: str, days: Iterable[str]) -> dict[str, Sums]:
        raise NotImplementedError

    def event_property_names(self, site: str, event: str, days: Iterable[str]) -> dict[str, int]:
        raise NotImplementedError

    def goal_sources(self, site: str, dim: str, goal_id: str, days: Iterable[str]) -> dict[str, tuple[int, int]]:
        raise NotImplementedError

    def goal_base(self, site: str, dim: str, days: Iterable[str], values: Iterable[str]) -> dict[str, int]:
        raise NotImplementedError


class MemoryCounters:
    """:class:`query.stores.RecentReads` over the events from ``oldest`` on (older ones expired)."""

    def __init__(self, hits: Sequence[Hit], oldest: dt.datetime) -> None:
        self.hits = [h for h in hits if h.at >= oldest]

    def _in(self, start_ms: int, end_ms: int) -> list[Hit]:
        return [h for h in self.hits if start_ms <= h.ms < end_ms]

    def _views(self, start_ms: int, end_ms: int) -> list[Hit]:
        return [h for h in self._in(start_ms, end_ms) if h.type == "pageview"]

    def spans(
        self, site: str, metric: str, spans: list[tuple[int, int]], filter_: tuple[str, str] | None = None
    ) -> list[int]:
        out = []
        for start, end in spans:
            views = [h for h in self._views(start, end) if filter_ is None or h.value(filter_[0]) == filter_[1]]
            out.append(len(views) if metric == "pageviews" else _distinct(views))
        return out

    def totals(self, site: str, start_ms: int, end_ms: int) -> dict[str, int]:
        views = self._views(start_ms, end_ms)
        hits = self._in(start_ms, end_ms)
        return {"pageviews": len(views), "events": len(hits), "bot_events": 0, "visitors": _distinct(hits)}

    def ranking(
        self, site: str, dim: str, start_ms: int, end_ms: int, limit: int = 10, *, rest_as_other: bool = False
    ) -> list[tuple[str, int]]:
        counts: dict[str, int] = defaultdict(int)
        for h in self._views(start_ms, end_ms):
            counts[h.value(dim)] += 1
        return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]

    def visitors(self, site: str, dim: str, start_ms: int, end_ms: int, values: Sequence[str]) -> list[int]:
        views = self._views(start_ms, end_ms)
        return [_distinct(h for h in views if h.value(dim) == value) for value in values]

    def goal_counts(self, site: str, goals: Sequence[GoalSpec], start_ms: int, end_ms: int) -> dict[str, GoalCount]:
        out = {}
        for goal in goals:
            hits = [h for h in self._in(start_ms, end_ms) if goal.matches(h.type, h.path, h.props)]
            out[goal.goal_id] = GoalCount(len(hits), _distinct(hits))
        return out

    def engagement(
        self, site: str, dim: str, start_ms: int, end_ms: int, values: Sequence[str] | None = None
    ) -> dict[str, Engagement]:
        return {}  # these hits carry no engagement reports

    def pairs(
        self, site: str, start_ms: int, end_ms: int, limit: int = 10, *, ref: str | None = None, path: str | None = None
    ) -> list[tuple[str, str | None, int]]:
        raise NotImplementedError

    def other_count(self, site: str, dim: str, start_ms: int, end_ms: int) -> int:
        raise NotImplementedError

    def custom_events(
        self, site: str, start_ms: int, end_ms: int, limit: int = 10, *, rest_as_other: bool = False
    ) -> list[EventRow]:
        raise NotImplementedError

    def event_properties(
        self, site: str, event: str, prop: str, start_ms: int, end_ms: int, limit: int = 10
    ) -> list[EventRow]:
        raise NotImplementedError

    def live(self, site: str, start_ms: int, end_ms: int, now_ms: int, limit: int = 10, flows: int = 40) -> LiveView:
        raise NotImplementedError
