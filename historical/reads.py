"""Reads of the settled rollups in MongoDB for the query layer (:class:`RollupReads`), and the
shapes they answer in.

Every filter document is built here from validated values: site ids from the
authenticated key, day strings computed by the planner, dimension names from the fixed
table in :mod:`query.params`, and client-supplied values only ever as the operand of an
equality on a fixed field — never as a field name or an operator.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from zoneinfo import ZoneInfo

from pymongo import DESCENDING
from pymongo.database import Database

from footfall.goals import FUNNEL_TIME_BOUNDS_MS
from footfall.revenue import RevenueSums
from footfall.vocabulary import (
    GOAL_BASE_PREFIX,
    GOAL_REVENUE,
    GOAL_REVENUE_SOURCE_PREFIX,
    GOAL_SOURCE_PREFIX,
    PROP_SEPARATOR,
)
from historical.buckets import ms
from historical.journeys import JourneyDays, journey_rows
from historical.store import (
    BREAKDOWNS,
    DAILY,
    FUNNELS,
    GOAL_SOURCES,
    HOURLY,
    JOURNEYS,
    RECONCILIATION,
    RUNS,
    has_clock_change,
)

Totals = dict[str, float]


@dataclass(slots=True)
class Sums:
    """Additive parts of the batch metrics (ratios are derived at the end)."""

    pageviews: int = 0
    visitors: int = 0  # sum of per-day exact counts (see the service's visitor notes)
    sessions: int = 0
    bounces: int = 0
    duration_s: float = 0.0  # total visit duration, seconds
    events: int = 0  # custom events (event and event_prop breakdowns)
    engaged_ms: int = 0  # engaged time of engagement reports, capped per report
    engagements: int = 0  # engagement reports
    scroll_views: int = 0  # page views that reported a scroll depth
    scroll_sum: int = 0  # their deepest scroll, summed (percent)

    def copy(self) -> Sums:
        return Sums(self.pageviews, self.visitors, self.sessions, self.bounces, self.duration_s, self.events,
                    self.engaged_ms, self.engagements, self.scroll_views, self.scroll_sum)  # fmt: skip

    def include(self, other: Sums) -> None:
        """Add ``other``'s parts to these."""
        for part in fields(self):
            setattr(self, part.name, getattr(self, part.name) + getattr(other, part.name))

    def add(self, doc: dict) -> None:
        self.events += int(doc.get("events") or 0)
        self.engaged_ms += int(doc.get("engaged_ms") or 0)
        self.engagements += int(doc.get("engagements") or 0)
        self.scroll_views += int(doc.get("scroll_views") or 0)
        self.scroll_sum += int(doc.get("scroll_sum") or 0)
        self.pageviews += int(doc.get("pageviews") or 0)
        self.visitors += int(doc.get("visitors") or 0)
        sessions = int(doc.get("sessions") or 0)
        self.sessions += sessions
        self.bounces += int(doc.get("bounces") or 0)
        self.duration_s += float(doc.get("visit_duration_s") or 0.0) * sessions


@dataclass(frozen=True, slots=True)
class Settlement:
    """What the batch layer had settled when a query read ``batch_runs``: the completed days
    from some day on (``days``) with the generation of each load (``generations``; days
    loaded before generations existed have none), and the watermark, the latest completed
    day of all."""

    days: frozenset[str]
    watermark: str | None
    generations: Mapping[str, str] = field(default_factory=dict)
    goals: Mapping[str, frozenset[str]] = field(default_factory=dict)  # day -> goal ids its rollup counted
    # Days whose rollup attributed converting visitors to their first session, into GOAL_SOURCES.
    goal_sources: frozenset[str] = frozenset()
    revenue_goals: Mapping[str, frozenset[str]] = field(default_factory=dict)  # day -> goal ids it counted revenue of


@dataclass(frozen=True, slots=True)
class HourDocs:
    """The hour documents of some settled days, by (day, bucket start ms); ``stale``: days
    whose documents are of the old ``site|day|HH`` layout on a day with a clock change,
    where an hour label is not one bucket (such a day is re-rolled, never guessed)."""

    docs: Mapping[tuple[str, int], dict]
    stale: frozenset[str] = frozenset()

    def __len__(self) -> int:  # the settled cache bounds its memory by items
        return len(self.docs)


@dataclass(frozen=True, slots=True)
class FunnelStepFigures:
    """One step of a funnel over some days: ``visitors`` summed over the days (a visitor
    returning on another day counts again), the median time from the step before (None for
    step 1 and when nobody reached the step) and the summed histogram of those times."""

    visitors: int
    median_ms: float | None
    # True when the median is estimated from the histogram (several days had visitors at the
    # step); False when it is one day's exact median.
    median_estimated: bool
    times_ms: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class FunnelHistory:
    """A funnel over the settled days that have its documents (``days``, oldest first)."""

    funnel_id: str
    name: str
    days: tuple[str, ...]
    steps: tuple[FunnelStepFigures, ...]

    def __len__(self) -> int:  # the settled cache bounds its memory by items
        return len(self.steps)


def histogram_median(counts: Sequence[int], bounds: Sequence[int] = FUNNEL_TIME_BOUNDS_MS) -> float | None:
    """The median of the times counted in ``counts`` (per bucket of ``bounds``, as the rollup
    stores them), None when there are none.

    The middle position (half the count) is found in its bucket and interpolated linearly
    between the bucket's bounds (bucket 0 spans 0 to the first bound); in the open last
    bucket the estimate is its lower bound. The true median lies in the same bucket, so the
    error is at most the bucket's width (about 40 % of its lower bound)."""
    if len(counts) != len(bounds) + 1:
        raise ValueError(f"a histogram has {len(bounds) + 1} counts, got {len(counts)}")
    total = sum(counts)
    if total == 0:
        return None
    middle, below = total / 2, 0
    for index, count in enumerate(counts):
        if count and below + count >= middle:
            if index == len(bounds):
                return float(bounds[-1])
            low = 0 if index == 0 else bounds[index - 1]
            return low + (middle - below) / count * (bounds[index] - low)
        below += count
    raise AssertionError("unreachable: the counts add up to total")


def merge_funnel(docs: Iterable[Mapping]) -> FunnelHistory:
    """One funnel's daily documents (``rollup_funnels``, at least one) as one answer.

    Step visitors and histograms are summed. A step's median is the exact daily median when
    one day alone had visitors at it, else :func:`histogram_median` of the summed histogram.
    The steps and the name are those of the latest day's document (the funnel as last rolled
    up); an older day whose definition had fewer steps adds nothing to the extra ones."""
    ordered = sorted(docs, key=lambda d: d["day"])
    if not ordered:
        raise ValueError("no funnel documents to merge")
    latest = ordered[-1]
    width = len(FUNNEL_TIME_BOUNDS_MS) + 1
    steps = []
    for index in range(len(latest["steps"])):
        visitors, times = 0, [0] * width
        exact: list[float | None] = []
        for doc in ordered:
            if index >= len(doc["steps"]):
                continue
            step = doc["steps"][index]
            if step["visitors"]:
                visitors += int(step["visitors"])
                exact.append(step["median_ms"])
                times = [a + int(b) for a, b in zip(times, step["times_ms"], strict=True)]
        if len(exact) == 1:
            steps.append(FunnelStepFigures(visitors, exact[0], False, tuple(times)))
        else:
            steps.append(
                FunnelStepFigures(visitors, histogram_median(times), len(exact) > 1 and index > 0, tuple(times))
            )
    days = tuple(doc["day"] for doc in ordered)
    return FunnelHistory(str(latest["funnel_id"]), str(latest.get("name") or ""), days, tuple(steps))


class RollupReads:
    """The settled rollups of one MongoDB database, as the query layer reads them."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def settlement(self, site: str, since: str) -> Settlement:
        """The completed days of ``site`` from ``since`` on, with the watermark: one read of
        ``batch_runs`` when any day from ``since`` on is complete (the latest of them is the
        watermark), a second of one document otherwise. A query needs both, and on the local
        Mongo-wire server (no secondary indexes) every read is a pass over the collection."""
        query = {"site_id": site, "status": "complete", "day": {"$gte": since}}
        fields = {"day": 1, "generation": 1, "goal_ids": 1, "goal_sources": 1, "revenue_goal_ids": 1}
        runs = list(self.db[RUNS].find(query, fields))
        days = frozenset(doc["day"] for doc in runs)
        generations = {doc["day"]: str(doc["generation"]) for doc in runs if doc.get("generation")}
        goals = {doc["day"]: frozenset(map(str, doc.get("goal_ids") or ())) for doc in runs}
        # A day rolled up while those rows lived in rollup_breakdowns says True: it is re-rolled
        # (``manage.py rollup``) before its sources are reported, and is named missing until then.
        attributed = frozenset(doc["day"] for doc in runs if doc.get("goal_sources") == GOAL_SOURCES)
        revenue = {doc["day"]: frozenset(map(str, doc.get("revenue_goal_ids") or ())) for doc in runs}
        watermark = max(days) if days else self.watermark(site)
        return Settlement(days, watermark, generations, goals, attributed, revenue)

    def watermark(self, site: str) -> str | None:
        doc = self.db[RUNS].find_one({"site_id": site, "status": "complete"}, {"day": 1}, sort=[("day", -1)])
        return doc["day"] if doc else None

    def runs(self, site: str, days: int) -> list[dict]:
        """The rollup run records of the newest ``days`` days of ``site``, newest first."""
        return self._newest(RUNS, site, days)

    def drift(self, site: str, days: int) -> list[dict]:
        """The realtime-vs-batch drift records of the newest ``days`` reconciled days of ``site``, newest first."""
        return self._newest(RECONCILIATION, site, days)

    def _newest(self, collection: str, site: str, days: int) -> list[dict]:
        return list(self.db[collection].find({"site_id": site}).sort("day", DESCENDING).limit(days))

    def daily(self, site: str, days: Iterable[str]) -> dict[str, dict]:
        days = sorted(set(days))
        if not days:
            return {}
        return {d["day"]: d for d in self.db[DAILY].find({"site_id": site, "day": {"$in": days}})}

    def hourly(self, site: str, tz: str, days: Iterable[str]) -> HourDocs:
        """The hour documents of ``site`` on ``days``, keyed by bucket start. Old-layout documents
        (no ``start_ms``) are placed by their local hour on days without a clock change, where that
        is exact; on a day with one they are left out and the day is named in ``stale``."""
        days = sorted(set(days))
        if not days:
            return HourDocs({})
        zone = ZoneInfo(tz)
        docs: dict[tuple[str, int], dict] = {}
        stale: set[str] = set()
        for d in self.db[HOURLY].find({"site_id": site, "day": {"$in": days}}):
            if "start_ms" in d:
                docs[(d["day"], int(d["start_ms"]))] = d
            elif has_clock_change(d["day"], tz):
                stale.add(d["day"])
            else:
                local = dt.datetime.combine(dt.date.fromisoformat(d["day"]), dt.time(int(d["hour"])), zone)
                docs[(d["day"], ms(local))] = d
        return HourDocs(docs, frozenset(stale))

    def filtered_daily(self, site: str, dim: str, value: str, days: Iterable[str]) -> dict[str, dict]:
        """Per day, the page views and visitors of one dimension value (from the breakdowns)."""
        days = sorted(set(days))
        if not days:
            return {}
        query = {"site_id": site, "dimension": dim, "value": value, "day": {"$in": days}}
        return {d["day"]: d for d in self.db[BREAKDOWNS].find(query, {"day": 1, "pageviews": 1, "visitors": 1})}

    def breakdown(
        self, site: str, dim: str, days: Iterable[str], *, ref: str | None = None, page: str | None = None
    ) -> dict[str, Sums]:
        """Per value of ``dim`` over ``days``: summed page views, visitors, sessions, bounces, duration.

        ``ref``/``page`` restrict referrer→page pairs (``dim == "refpage"``) to one side; the
        values are then the other side."""
        days = sorted(set(days))
        if not days:
            return {}
        query: dict[str, object] = {"site_id": site, "dimension": dim, "day": {"$in": days}}
        if ref is not None:
            query["ref"] = ref
        if page is not None:
            query["page"] = page
        projection = {"value": 1, "ref": 1, "page": 1, "pageviews": 1, "visitors": 1, "sessions": 1, "bounces": 1}
        additive = ("visit_duration_s", "events", "engaged_ms", "engagements", "scroll_views", "scroll_sum")
        projection |= dict.fromkeys(additive, 1)
        out: dict[str, Sums] = {}
        # Grouped here rather than with $group: one indexed scan, and the same code on MongoDB
        # and on the Mongo-wire servers (whose aggregation support differs).
        for doc in self.db[BREAKDOWNS].find(query, projection):
            key = doc["page"] if ref is not None else doc["ref"] if page is not None else doc["value"]
            out.setdefault(key, Sums()).add(doc)
        return out

    def goal_counts(self, site: str, days: Iterable[str]) -> dict[str, tuple[int, int]]:
        """Per goal id over ``days``: (conversions, unique conversions summed per day)."""
        days = sorted(set(days))
        if not days:
            return {}
        out: dict[str, tuple[int, int]] = {}
        query = {"site_id": site, "dimension": "goal", "day": {"$in": days}}
        for doc in self.db[BREAKDOWNS].find(query, {"value": 1, "events": 1, "visitors": 1}):
            events, visitors = out.get(doc["value"], (0, 0))
            out[doc["value"]] = (events + int(doc.get("events") or 0), visitors + int(doc.get("visitors") or 0))
        return out

    def goal_revenue(self, site: str, days: Iterable[str]) -> dict[str, RevenueSums]:
        """Per revenue goal id over ``days``: its revenue per currency and its conversions without
        revenue (goals a day did not count revenue of add nothing for it)."""
        days = sorted(set(days))
        if not days:
            return {}
        out: dict[str, RevenueSums] = {}
        query = {"site_id": site, "dimension": {"$in": ["goal", GOAL_REVENUE]}, "day": {"$in": days}}
        projection = {
            "dimension": 1,
            "value": 1,
            "goal_id": 1,
            "currency": 1,
            "events": 1,
            "revenue": 1,
            "no_revenue": 1,
        }
        for doc in self.db[BREAKDOWNS].find(query, projection):
            if doc["dimension"] == "goal":
                if doc.get("no_revenue") is not None:
                    out.setdefault(str(doc["value"]), RevenueSums()).without += int(doc["no_revenue"])
            else:
                sums = out.setdefault(str(doc["goal_id"]), RevenueSums())
                sums.add(str(doc["currency"]), int(doc.get("events") or 0), int(doc.get("revenue") or 0))
        return out

    def goal_source_revenue(
        self, site: str, dim: str, goal_id: str, days: Iterable[str], values: Iterable[str]
    ) -> dict[str, RevenueSums]:
        """Per one of ``values`` of goal source dimension ``dim``: the revenue of goal ``goal_id``'s
        conversions attributed to it over ``days``, per currency; values without any are absent."""
        days, wanted = sorted(set(days)), set(values)
        if not days or not wanted:
            return {}
        query = {
            "site_id": site,
            "dimension": GOAL_REVENUE_SOURCE_PREFIX + dim,
            "goal_id": goal_id,
            "day": {"$in": days},
        }
        out: dict[str, RevenueSums] = {}
        for doc in self.db[GOAL_SOURCES].find(query, {"value": 1, "currency": 1, "events": 1, "revenue": 1}):
            value = str(doc["value"]).split(PROP_SEPARATOR, 2)[2]
            if value in wanted:
                sums = out.setdefault(value, RevenueSums())
                sums.add(str(doc["currency"]), int(doc.get("events") or 0), int(doc.get("revenue") or 0))
        return out

    def event_properties(self, site: str, event: str, prop: str, days: Iterable[str]) -> dict[str, Sums]:
        """Per value (as text) of property ``prop`` of custom event ``event`` over ``days``:
        summed events and visitors. Each day keeps its top values and sums the rest under
        ``(other)`` (:data:`footfall.vocabulary.EVENT_PROP_VALUES`)."""
        days = sorted(set(days))
        if not days:
            return {}
        query = {"site_id": site, "dimension": "event_prop", "event": event, "prop": prop, "day": {"$in": days}}
        out: dict[str, Sums] = {}
        for doc in self.db[BREAKDOWNS].find(query, {"prop_value": 1, "events": 1, "visitors": 1}):
            out.setdefault(doc["prop_value"], Sums()).add(doc)
        return out

    def funnel(self, site: str, funnel_id: str, days: Iterable[str]) -> FunnelHistory | None:
        """Funnel ``funnel_id`` of ``site`` over the settled ``days`` (see :func:`merge_funnel`);
        None when none of them has its document (not rolled up with this funnel yet)."""
        days = sorted(set(days))
        if not days:
            return None
        query = {"site_id": site, "funnel_id": str(funnel_id), "day": {"$in": days}}
        docs = list(self.db[FUNNELS].find(query, {"day": 1, "funnel_id": 1, "name": 1, "steps": 1}))
        return merge_funnel(docs) if docs else None

    def goal_days(self, site: str, goal_id: str, days: Iterable[str]) -> dict[str, tuple[int, int]]:
        """Per day of ``days`` on which goal ``goal_id`` was reached: (conversions, unique
        conversions) of that day. Days without a document are absent (none, or not counted)."""
        days = sorted(set(days))
        if not days:
            return {}
        query = {"site_id": site, "dimension": "goal", "value": goal_id, "day": {"$in": days}}
        out: dict[str, tuple[int, int]] = {}
        for doc in self.db[BREAKDOWNS].find(query, {"day": 1, "events": 1, "visitors": 1}):
            events, visitors = out.get(doc["day"], (0, 0))
            out[doc["day"]] = (events + int(doc.get("events") or 0), visitors + int(doc.get("visitors") or 0))
        return out

    def event_property_names(self, site: str, event: str, days: Iterable[str]) -> dict[str, int]:
        """The property names custom event ``event`` carried on ``days``, with their events
        summed over the days (from the ``event_prop`` breakdown, so only properties that had a
        value on a settled day)."""
        days = sorted(set(days))
        if not days:
            return {}
        query = {"site_id": site, "dimension": "event_prop", "event": event, "day": {"$in": days}}
        out: dict[str, int] = {}
        for doc in self.db[BREAKDOWNS].find(query, {"prop": 1, "events": 1}):
            out[str(doc["prop"])] = out.get(str(doc["prop"]), 0) + int(doc.get("events") or 0)
        return out

    def goal_sources(self, site: str, dim: str, goal_id: str, days: Iterable[str]) -> dict[str, tuple[int, int]]:
        """Per value of goal source dimension ``dim`` (:data:`footfall.vocabulary.GOAL_SOURCE_DIMENSIONS`)
        over ``days``: (converting visitors of goal ``goal_id`` attributed to it, summed per day;
        their conversions)."""
        days = sorted(set(days))
        if not days:
            return {}
        query = {"site_id": site, "dimension": GOAL_SOURCE_PREFIX + dim, "goal_id": goal_id, "day": {"$in": days}}
        out: dict[str, tuple[int, int]] = {}
        for doc in self.db[GOAL_SOURCES].find(query, {"value": 1, "visitors": 1, "events": 1}):
            value = str(doc["value"]).partition(PROP_SEPARATOR)[2]
            visitors, conversions = out.get(value, (0, 0))
            out[value] = (visitors + int(doc.get("visitors") or 0), conversions + int(doc.get("events") or 0))
        return out

    def goal_base(self, site: str, dim: str, days: Iterable[str], values: Iterable[str]) -> dict[str, int]:
        """Per one of ``values`` of goal source dimension ``dim``: the visitors attributed to it over
        ``days`` (first session of the day), summed per day; values without any are absent."""
        days, values = sorted(set(days)), sorted(set(values))
        if not days or not values:
            return {}
        query = {"site_id": site, "dimension": GOAL_BASE_PREFIX + dim, "value": {"$in": values}, "day": {"$in": days}}
        out: dict[str, int] = {}
        for doc in self.db[GOAL_SOURCES].find(query, {"value": 1, "visitors": 1}):
            out[str(doc["value"])] = out.get(str(doc["value"]), 0) + int(doc.get("visitors") or 0)
        return out

    def journeys(self, site: str, days: Iterable[str]) -> JourneyDays:
        """The kept session steps of ``site`` on the settled ``days`` that were rolled up with
        journeys (:mod:`historical.journeys`); a day rolled up before them is absent."""
        days = sorted(set(days))
        if not days:
            return JourneyDays()
        query = {"site_id": site, "day": {"$in": days}}
        docs = self.db[JOURNEYS].find(query, {"day": 1, "chunk": 1, "chunks": 1, "labels": 1, "rows": 1})
        return JourneyDays(journey_rows(docs))
