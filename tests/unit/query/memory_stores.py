"""In-memory readers of both stores for unit tests of the merge (:mod:`query.stores`).

Both answer from one list of :class:`Hit` events, the way the real stores would after the
pipeline ran: :class:`MemoryRollups` holds the settled days' documents, as the rollup loads
them (exact, by site-local day and hour bucket); :class:`MemoryCounters` the speed layer's
counts of the events still inside its retention window (exact here, where Redis's visitors
are estimates), with its per-minute caps. A test can then check a merged answer against the
events themselves.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo

from footfall.goals import GoalSpec, prop_text
from footfall.revenue import RevenueSums, revenue_of
from footfall.vocabulary import (
    EVENT_COUNT_DIMENSIONS,
    EVENT_PROP_VALUES,
    MINUTE_VALUES,
    NON_CUSTOM_TYPES,
    PROP_SEPARATOR,
    REFPAGE_SEPARATOR,
    SESSION_GAP_MINUTES,
    VALUE_OTHER,
    QueryError,
)
from historical.buckets import day_buckets, ms
from historical.reads import merge_funnel
from query.stores import (
    Engagement,
    EventRow,
    FunnelHistory,
    GoalCount,
    HourDocs,
    LiveView,
    Row,
    Settlement,
    Sums,
)
from realtime.keys import ACTIVE_WINDOW_MS
from realtime.trends import Rising, rank_rising

SITE = "shop"
SESSION_GAP = dt.timedelta(minutes=SESSION_GAP_MINUTES)
# The goal source dimensions a Hit carries, by the field of a session's first page view they
# take; the others are null on every hit, so they attribute nobody (as a null value does).
SOURCE_FIELDS: Mapping[str, str] = {"ref": "ref", "entry_page": "page"}


@dataclass(frozen=True)
class Hit:
    """One human event of site :data:`SITE`: a page view, or a custom event named by ``type``
    with its ``props`` (any type outside :data:`~footfall.vocabulary.NON_CUSTOM_TYPES`)."""

    at: dt.datetime
    path: str = "/"
    ref: str = "(direct)"
    visitor: str = "v1"
    type: str = "pageview"
    props: Mapping[str, object] = field(default_factory=dict)

    @property
    def ms(self) -> int:
        return ms(self.at)

    @property
    def custom(self) -> bool:
        return self.type not in NON_CUSTOM_TYPES

    def value(self, dim: str) -> str:
        """This page view's value of page view dimension ``dim`` (``page``, ``ref`` or ``refpage``)."""
        return {"page": self.path, "ref": self.ref, "refpage": f"{self.ref}{REFPAGE_SEPARATOR}{self.path}"}[dim]

    def values(self, dim: str) -> list[str]:
        """What this hit counts under ``dim`` in both stores: a page view its value of a page
        view dimension; a custom event its name (``event``) and one ``event_prop`` value per
        property (name, property and value text, joined by PROP_SEPARATOR); nothing else."""
        if dim == "event":
            return [self.type] if self.custom else []
        if dim == "event_prop":
            return [prop_value(self.type, name, text) for name, text in self.prop_texts()]
        return [self.value(dim)] if self.type == "pageview" else []

    def prop_texts(self) -> list[tuple[str, str]]:
        """A custom event's properties as (name, value text as both layers write it)."""
        if not self.custom:
            return []
        # Names holding the separator are left out, as the speed layer does (it could not read
        # them back); the batch layer keeps them, a difference these tests do not exercise.
        return [(name, prop_text(value)) for name, value in self.props.items() if PROP_SEPARATOR not in name]


def prop_value(event: str, prop: str, text: str) -> str:
    """The ``event_prop`` value of ``event``'s property ``prop`` with value text ``text``."""
    return f"{event}{PROP_SEPARATOR}{prop}{PROP_SEPARATOR}{text}"


def _distinct(hits: Iterable[Hit]) -> int:
    return len({h.visitor for h in hits})


def _top(counts: Mapping[str, int], limit: int, rest_as_other: bool = False) -> list[tuple[str, int]]:
    """The ``limit`` values with most counts, ties by value; with ``rest_as_other`` the values
    left out are added to the ``(other)`` row (one of the ``limit``), so the rows add up."""
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    if not rest_as_other or len(ranked) <= limit:
        return ranked[:limit]
    kept = dict([kv for kv in ranked if kv[0] != VALUE_OTHER][: limit - 1])
    kept[VALUE_OTHER] = sum(counts.values()) - sum(kept.values())
    return sorted(kept.items(), key=lambda kv: (-kv[1], kv[0]))


def session_starts(hits: Iterable[Hit]) -> list[Hit]:
    """The page views that start a session, oldest first: a visitor's first, and each one more
    than :data:`SESSION_GAP` after the visitor's previous page view (whatever the day)."""
    starts: list[Hit] = []
    last_seen: dict[str, dt.datetime] = {}
    for h in sorted((h for h in hits if h.type == "pageview"), key=lambda h: h.at):
        if h.visitor not in last_seen or h.at - last_seen[h.visitor] > SESSION_GAP:
            starts.append(h)
        last_seen[h.visitor] = h.at
    return starts


def _add_revenue(sums: RevenueSums, goal: GoalSpec, hits: Iterable[Hit]) -> None:
    for hit in hits:
        got = revenue_of(hit.props, goal.revenue_prop, goal.currency_prop, goal.currency)
        if got is None:
            sums.without += 1
        else:
            sums.add(got[0], 1, got[1])


class MemoryRollups:
    """:class:`query.stores.SettledReads` over the ``settled`` days' events, in zone ``tz``.

    ``goal_ids``: the goals each settled day was rolled up with (all of ``goals`` by default);
    ``funnels``: funnel id -> the day documents of ``rollup_funnels`` (their days settled);
    ``prop_values``: the values kept per (event, property) and day, the rest ``(other)``;
    ``attributed``: the settled days whose rollup attributed goal sources (all by default).

    Simplified: a day's totals take one session per visitor (goal sources, though, follow the
    rollup's sessions: :meth:`goal_sources`)."""

    def __init__(
        self,
        tz: str,
        hits: Sequence[Hit],
        settled: Iterable[str],
        goals: Sequence[GoalSpec] = (),
        goal_ids: Mapping[str, Iterable[str]] | None = None,
        funnels: Mapping[str, Sequence[Mapping]] | None = None,
        prop_values: int = EVENT_PROP_VALUES,
        attributed: Iterable[str] | None = None,
    ) -> None:
        self.zone = ZoneInfo(tz)
        self.settled = frozenset(settled)
        self.goals = list(goals)
        self.goal_ids = {d: frozenset(ids) for d, ids in (goal_ids or {}).items()}
        self.funnels = funnels or {}
        self.prop_values = prop_values
        self.attributed = self.settled if attributed is None else self.settled & frozenset(attributed)
        self.by_day: dict[str, list[Hit]] = defaultdict(list)
        for hit in hits:
            self.by_day[self._day(hit)].append(hit)
        # Sessions are built over all the events, so one begun the evening before is seen whole.
        self.starts = session_starts(hits)

    def _day(self, hit: Hit) -> str:
        return hit.at.astimezone(self.zone).date().isoformat()

    def _days(self, days: Iterable[str]) -> list[str]:
        return sorted(d for d in set(days) if d in self.settled)

    def _views(self, day: str) -> list[Hit]:
        return [h for h in self.by_day.get(day, []) if h.type == "pageview"]

    def settlement(self, site: str, since: str) -> Settlement:
        days = frozenset(d for d in self.settled if d >= since and site == SITE)
        goals = {d: self.goal_ids.get(d, frozenset(g.goal_id for g in self.goals)) for d in days}
        watermark = max(self.settled) if self.settled and site == SITE else None
        paid = frozenset(g.goal_id for g in self.goals if g.has_revenue)
        revenue = {d: goals[d] & paid for d in days}
        return Settlement(days, watermark, {d: "1" for d in days}, goals, days & self.attributed, revenue)

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
                "day": day, "pageviews": len(views), "visitors": _distinct(self.by_day[day]), "sessions": sessions,
                "bounces": bounces, "bounce_rate": bounces / sessions if sessions else 0.0,
                "visit_duration_s": duration / sessions if sessions else 0.0,
            }  # fmt: skip
        return out

    def hourly(self, site: str, tz: str, days: Iterable[str]) -> HourDocs:
        docs = {}
        for day in self._days(days):
            for bucket in day_buckets(dt.date.fromisoformat(day), self.zone):
                hits = [h for h in self.by_day[day] if bucket.start_ms <= h.ms < ms(bucket.end)]
                views = sum(1 for h in hits if h.type == "pageview")
                docs[(day, bucket.start_ms)] = {"pageviews": views, "visitors": _distinct(hits), "sessions": 0}
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
        """Per value of ``dim``, summed over the days (events for ``event``, page views else);
        for ``refpage`` with ``ref`` (``page``) the pages of that referrer (its referrers)."""
        counted = "events" if dim in EVENT_COUNT_DIMENSIONS else "pageviews"
        out: dict[str, Sums] = {}
        for day in self._days(days):
            by_value: dict[str, list[Hit]] = defaultdict(list)
            for h in self.by_day[day]:
                for value in h.values(dim):
                    if (ref is not None and h.ref != ref) or (page is not None and h.path != page):
                        continue
                    if ref is not None or page is not None:  # one side of the pairs: the other is the value
                        value = h.path if ref is not None else h.ref
                    by_value[value].append(h)
            for value, hits in by_value.items():
                out.setdefault(value, Sums()).add({counted: len(hits), "visitors": _distinct(hits)})
        return out

    def goal_counts(self, site: str, days: Iterable[str]) -> dict[str, tuple[int, int]]:
        out: dict[str, tuple[int, int]] = {}
        for day in self._days(days):
            for goal_id, (events, visitors) in self._goal_day(day).items():
                before = out.get(goal_id, (0, 0))
                out[goal_id] = (before[0] + events, before[1] + visitors)
        return out

    def _conversions(self, day: str) -> dict[str, list[Hit]]:
        """The day's conversions by goal id, of the goals its rollup counted."""
        counted = self.settlement(SITE, day).goals.get(day, frozenset())
        return {
            goal.goal_id: [h for h in self.by_day.get(day, []) if goal.matches(h.type, h.path, h.props)]
            for goal in self.goals
            if goal.goal_id in counted
        }

    def _goal_day(self, day: str) -> dict[str, tuple[int, int]]:
        return {goal_id: (len(hits), _distinct(hits)) for goal_id, hits in self._conversions(day).items() if hits}

    def goal_days(self, site: str, goal_id: str, days: Iterable[str]) -> dict[str, tuple[int, int]]:
        found = {day: self._goal_day(day).get(goal_id) for day in self._days(days)}
        return {day: counts for day, counts in found.items() if counts}

    def funnel(self, site: str, funnel_id: str, days: Iterable[str]) -> FunnelHistory | None:
        wanted = set(self._days(days))
        docs = [doc for doc in self.funnels.get(funnel_id, ()) if doc["day"] in wanted]
        return merge_funnel(docs) if docs else None

    def event_properties(self, site: str, event: str, prop: str, days: Iterable[str]) -> dict[str, Sums]:
        """Per value text of ``event``'s property ``prop``: events and visitors summed over the
        days; each day keeps its ``prop_values`` texts with most events (ties: text ascending)
        and counts the rest as one ``(other)`` row, its visitors distinct over all of them."""
        out: dict[str, Sums] = {}
        for day in self._days(days):
            texts = [(text, h) for h in self.by_day[day] if h.type == event for name, text in h.prop_texts()
                     if name == prop]  # fmt: skip
            counts = Counter(text for text, _ in texts)
            kept = {text for text, _ in _top(counts, self.prop_values)}
            rows: dict[str, list[Hit]] = defaultdict(list)
            for text, h in texts:
                rows[text if text in kept else VALUE_OTHER].append(h)
            for value, hits in rows.items():
                out.setdefault(value, Sums()).add({"events": len(hits), "visitors": _distinct(hits)})
        return out

    def event_property_names(self, site: str, event: str, days: Iterable[str]) -> dict[str, int]:
        """The property names ``event`` carried on the days, with the events carrying each."""
        names: Counter[str] = Counter()
        for day in self._days(days):
            names.update(name for h in self.by_day[day] if h.type == event for name, _ in h.prop_texts())
        return dict(names)

    def _first_sessions(self, day: str) -> dict[str, Hit]:
        """Each visitor's first session starting on ``day``, by its first page view (a session
        begun the day before is not the day's, though its page views are)."""
        first: dict[str, Hit] = {}
        for h in self.starts:
            if self._day(h) == day:
                first.setdefault(h.visitor, h)
        return first

    def _sources(self, day: str, dim: str) -> dict[str, str]:
        """Visitor -> the value of goal source dimension ``dim`` its day is attributed to (none
        on a day not attributed, or without a session starting that day, or a null value)."""
        if day not in self.attributed or dim not in SOURCE_FIELDS:
            return {}
        return {visitor: h.value(SOURCE_FIELDS[dim]) for visitor, h in self._first_sessions(day).items()}

    def goal_sources(self, site: str, dim: str, goal_id: str, days: Iterable[str]) -> dict[str, tuple[int, int]]:
        """Per value of ``dim``: (visitors converting on ``goal_id`` attributed to it, summed per
        day; all their conversions that day, those before their first page view too)."""
        out: dict[str, tuple[int, int]] = {}
        for day in self._days(days):
            sources = self._sources(day, dim)
            per_visitor = Counter(h.visitor for h in self._conversions(day).get(goal_id, []))
            for visitor, conversions in per_visitor.items():
                if visitor in sources:
                    visitors, before = out.get(sources[visitor], (0, 0))
                    out[sources[visitor]] = (visitors + 1, before + conversions)
        return out

    def goal_revenue(self, site: str, days: Iterable[str]) -> dict[str, RevenueSums]:
        """Per revenue goal: its conversions' revenue per currency, and those without any."""
        out: dict[str, RevenueSums] = {}
        specs = {g.goal_id: g for g in self.goals if g.has_revenue}
        for day in self._days(days):
            for goal_id, hits in self._conversions(day).items():
                if goal_id in specs:
                    _add_revenue(out.setdefault(goal_id, RevenueSums()), specs[goal_id], hits)
        return out

    def goal_source_revenue(
        self, site: str, dim: str, goal_id: str, days: Iterable[str], values: Iterable[str]
    ) -> dict[str, RevenueSums]:
        """Per one of ``values`` of ``dim``: the revenue of ``goal_id``'s conversions attributed to it."""
        spec = next((g for g in self.goals if g.goal_id == goal_id and g.has_revenue), None)
        wanted, out = set(values), {}
        for day in self._days(days) if spec else ():
            sources = self._sources(day, dim)
            for hit in self._conversions(day).get(goal_id, []):
                if sources.get(hit.visitor) in wanted:
                    _add_revenue(out.setdefault(sources[hit.visitor], RevenueSums()), spec, [hit])  # type: ignore[arg-type]
        return {value: sums for value, sums in out.items() if sums.currencies}

    def goal_base(self, site: str, dim: str, days: Iterable[str], values: Iterable[str]) -> dict[str, int]:
        """Per one of ``values`` of ``dim``: the visitors attributed to it, summed per day."""
        if not self.goals:
            return {}  # the rollup attributes the visitors of sites with goals only
        wanted = set(values)
        counts = Counter(v for day in self._days(days) for v in self._sources(day, dim).values() if v in wanted)
        return dict(counts)


class MemoryCounters:
    """:class:`query.stores.RecentReads` over the events from ``oldest`` on (older ones expired).

    ``cap``: the values of a dimension one minute holds; the rest of the minute's values count
    as ``(other)``, their visitors too (:mod:`realtime.keys`, Caps). Simplified: a minute's
    busiest values (ties by value) take its places, as if one batch carried the minute; the
    hour keys, which Redis reads for whole hours under their own larger cap, are not modelled
    (every read sums minutes); goal counts match the events themselves, whatever the caps."""

    def __init__(self, hits: Sequence[Hit], oldest: dt.datetime, cap: int = MINUTE_VALUES) -> None:
        self.hits = [h for h in hits if h.at >= oldest]
        self.cap = cap

    def _in(self, start_ms: int, end_ms: int) -> list[Hit]:
        return [h for h in self.hits if start_ms <= h.ms < end_ms]

    def _views(self, start_ms: int, end_ms: int) -> list[Hit]:
        return [h for h in self._in(start_ms, end_ms) if h.type == "pageview"]

    def _stored(self, dim: str, start_ms: int, end_ms: int) -> list[tuple[str, Hit]]:
        """Each unit the range counted in ``dim`` (a page view, an event, a property), with
        the value its minute's sorted set holds it under: its own, or ``(other)``."""
        minutes: dict[int, list[tuple[str, Hit]]] = defaultdict(list)
        for h in self._in(start_ms, end_ms):
            minutes[h.ms // 60_000] += [(value, h) for value in h.values(dim)]
        stored = []
        for units in minutes.values():
            held = {value for value, _ in _top(Counter(value for value, _ in units), self.cap)}
            stored += [(value if value in held else VALUE_OTHER, h) for value, h in units]
        return stored

    def _counts(self, dim: str, start_ms: int, end_ms: int) -> Counter[str]:
        return Counter(value for value, _ in self._stored(dim, start_ms, end_ms))

    def _visitors(self, dim: str, start_ms: int, end_ms: int) -> dict[str, int]:
        """Visitors per stored value of ``dim`` (the ``(other)`` sketch: those past the caps)."""
        seen: dict[str, set[str]] = defaultdict(set)
        for value, h in self._stored(dim, start_ms, end_ms):
            seen[value].add(h.visitor)
        return {value: len(visitors) for value, visitors in seen.items()}

    def spans(
        self, site: str, metric: str, spans: list[tuple[int, int]], filter_: tuple[str, str] | None = None
    ) -> list[int]:
        out = []
        for start, end in spans:
            if filter_ is None:  # the counters hash and the site's sketch: every human event
                found = len(self._views(start, end)) if metric == "pageviews" else _distinct(self._in(start, end))
            elif metric == "pageviews":
                found = self._counts(filter_[0], start, end)[filter_[1]]
            else:
                found = self._visitors(filter_[0], start, end).get(filter_[1], 0)
            out.append(found)
        return out

    def totals(self, site: str, start_ms: int, end_ms: int) -> dict[str, int]:
        views = self._views(start_ms, end_ms)
        hits = self._in(start_ms, end_ms)
        return {"pageviews": len(views), "events": len(hits), "bot_events": 0, "visitors": _distinct(hits)}

    def ranking(
        self, site: str, dim: str, start_ms: int, end_ms: int, limit: int = 10, *, rest_as_other: bool = False
    ) -> list[tuple[str, int]]:
        return _top(self._counts(dim, start_ms, end_ms), limit, rest_as_other)

    def visitors(self, site: str, dim: str, start_ms: int, end_ms: int, values: Sequence[str]) -> list[int]:
        found = self._visitors(dim, start_ms, end_ms)
        return [found.get(value, 0) for value in values]

    def goal_counts(self, site: str, goals: Sequence[GoalSpec], start_ms: int, end_ms: int) -> dict[str, GoalCount]:
        out = {}
        for goal in goals:
            hits = [h for h in self._in(start_ms, end_ms) if goal.matches(h.type, h.path, h.props)]
            out[goal.goal_id] = GoalCount(len(hits), _distinct(hits))
        return out

    def goal_revenue(self, site: str, goals: Sequence[GoalSpec], start_ms: int, end_ms: int) -> dict[str, RevenueSums]:
        out = {}
        for goal in goals:
            if goal.has_revenue:
                hits = [h for h in self._in(start_ms, end_ms) if goal.matches(h.type, h.path, h.props)]
                out[goal.goal_id] = sums = RevenueSums()
                _add_revenue(sums, goal, hits)
                sums.without = 0  # as the speed layer: the caller counts conversions without revenue
        return out

    def engagement(
        self, site: str, dim: str, start_ms: int, end_ms: int, values: Sequence[str] | None = None
    ) -> dict[str, Engagement]:
        return {}  # these hits carry no engagement reports

    def pairs(
        self, site: str, start_ms: int, end_ms: int, limit: int = 10, *, ref: str | None = None, path: str | None = None
    ) -> list[tuple[str, str | None, int]]:
        """The pages of referrer ``ref`` (the referrers of page ``path``) as ``(page or referrer,
        its refpage value, page views)``; the page views of ``ref`` (``path``) that no held pair
        carries (past a minute's cap), and the pairs beyond ``limit``, are one ``(other)`` row
        without a refpage value, so the rows add up to the referrer's (page's) page views."""
        if (ref is None) == (path is None):
            raise QueryError("dimension", "pairs are of one referrer or of one page")
        members: dict[str, str] = {}  # the other side of each held pair -> its refpage value
        counts: dict[str, int] = {}
        for member, views in self._counts("refpage", start_ms, end_ms).items():
            pair_ref, separator, pair_page = member.partition(REFPAGE_SEPARATOR)
            if separator and (pair_ref == ref if ref is not None else pair_page == path):
                shown = pair_page if ref is not None else pair_ref
                members[shown], counts[shown] = member, views
        own_dim, own_value = ("ref", ref) if ref is not None else ("page", path)
        if (rest := self._counts(own_dim, start_ms, end_ms)[own_value] - sum(counts.values())) > 0:
            counts[VALUE_OTHER] = rest
        return [(shown, members.get(shown), n) for shown, n in _top(counts, limit, rest_as_other=True)]

    def other_count(self, site: str, dim: str, start_ms: int, end_ms: int) -> int:
        """What the range's minutes counted under ``(other)`` in ``dim`` (past their caps)."""
        return self._counts(dim, start_ms, end_ms)[VALUE_OTHER]

    def custom_events(
        self, site: str, start_ms: int, end_ms: int, limit: int = 10, *, rest_as_other: bool = False
    ) -> list[EventRow]:
        """The names with most events; ``(other)`` (past the caps, and with ``rest_as_other`` the
        names left out) ranks as a name, with the visitors of those past the caps only."""
        visitors = self._visitors("event", start_ms, end_ms)
        ranked = _top(self._counts("event", start_ms, end_ms), limit, rest_as_other)
        return [EventRow(name, events, visitors.get(name, 0)) for name, events in ranked]

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
        """The value texts of ``event``'s ``prop`` with most events (with ``rest_as_other`` the texts
        left out are one ``(other)`` row, with no visitors); those a minute counted under
        ``(other)`` belong to no event and are in no row."""
        prefix = prop_value(event, prop, "")
        visitors = self._visitors("event_prop", start_ms, end_ms)
        counts = Counter({v.removeprefix(prefix): n for v, n in self._counts("event_prop", start_ms, end_ms).items()
                          if v.startswith(prefix)})  # fmt: skip
        return [EventRow(text, n, visitors.get(prefix + text, 0)) for text, n in _top(counts, limit, rest_as_other)]

    def live(self, site: str, start_ms: int, end_ms: int, now_ms: int, limit: int = 10, flows: int = 40) -> LiveView:
        """The range's page views per minute (zeros included) and totals, the visitors of the last
        five minutes, the top pages and referrers with visitors, the values rising in the last ten
        whole minutes against the 180 before (:func:`realtime.trends.rank_rising`, the detector
        itself) and the top referrer→page flows, ``(other)`` as a flow from ``(other)`` to ``(other)``."""
        per_minute = Counter(h.ms // 60_000 for h in self._views(start_ms, end_ms))
        minutes = range(start_ms // 60_000, -(-end_ms // 60_000))

        def top(dim: str) -> list[Row]:
            visitors = self._visitors(dim, start_ms, end_ms)
            return [Row(value, n, visitors[value]) for value, n in self.ranking(site, dim, start_ms, end_ms, limit)]

        pairs = []
        for member, n in self.ranking(site, "refpage", start_ms, end_ms, flows):
            ref, _, page = member.partition(REFPAGE_SEPARATOR)
            pairs.append((VALUE_OTHER, VALUE_OTHER, n) if member == VALUE_OTHER else (ref, page, n))
        return LiveView(
            pageviews_per_minute=[(m * 60_000, per_minute[m]) for m in minutes],
            totals=self.totals(site, start_ms, end_ms),
            concurrent=_distinct(h for h in self.hits if h.ms >= now_ms - ACTIVE_WINDOW_MS),
            top_pages=top("page"),
            top_referrers=top("ref"),
            rising_pages=self._rising("page", now_ms, limit),
            rising_referrers=self._rising("ref", now_ms, limit),
            flows=pairs,
        )

    def _rising(self, dim: str, now_ms: int, limit: int, recent: int = 10, baseline: int = 180) -> list[Rising]:
        """:func:`rank_rising` of the last ``recent`` whole minutes against the ``baseline``
        minutes before them, in blocks of ``recent`` minutes."""
        blocks = baseline // recent
        first = now_ms // 60_000 - recent - baseline
        sums = [Counter[str]() for _ in range(blocks + 1)]
        for value, h in self._stored(dim, first * 60_000, (now_ms // 60_000) * 60_000):
            sums[(h.ms // 60_000 - first) // recent][value] += 1
        history = {value: [sums[i][value] for i in range(blocks)] for block in sums[:blocks] for value in block}
        return rank_rising(sums[blocks], history, blocks, limit=limit)
