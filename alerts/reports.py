"""A scheduled report's figures for one site and one period, read through the query layer.

Every figure is what the REST API answers for the same days, because it is computed by the
same calls: totals are :meth:`QueryService.aggregate` over the period and over the calendar
period before it (``GET .../aggregate?from=&to=``), top pages and referrers
:meth:`QueryService.breakdown` (``GET .../breakdown/pages`` and ``/referrers``), goal
conversions :meth:`Conversions.goals` (``GET .../goals``) and the chart's daily visitors
:meth:`QueryService.timeseries` (``GET .../timeseries?metric=visitors&interval=day``). The
change against the previous period follows the API's rule (``compare=previous_period``),
applied to the calendar period before: the month before, whatever its length.

Days the nightly rollup has not settled are answered with the query layer's usual merge
(recent time from the speed layer, older time not counted), and the report says which.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from alerts.periods import Period
from footfall.goals import GoalSpec
from query.conversions import Conversions
from query.params import Range
from query.service import QueryService, QuerySite

TOP = 10  # rows of the top pages and top referrers
TOTALS = ("visitors", "pageviews", "sessions", "bounce_rate", "visit_duration")
BREAKDOWN_METRICS = ("pageviews", "visitors")


@dataclass(frozen=True, slots=True)
class Total:
    """One figure of the period: ``value``, ``previous`` (the period before) and ``change``
    (a fraction, 0.25 = +25 %; None where the API gives none)."""

    value: float | int | None
    previous: float | int | None
    change: float | None


@dataclass(frozen=True, slots=True)
class Report:
    """What one report shows; rows are the API's rows (dicts with the same keys)."""

    site_id: str
    site_name: str
    tz: str
    period: Period
    previous: Period
    totals: dict[str, Total]
    top_pages: list[dict[str, object]]
    top_referrers: list[dict[str, object]]
    goals: list[dict[str, object]]
    daily_visitors: list[tuple[dt.datetime, int | float | None]]
    unsettled_days: list[str]  # days of the period the nightly rollup had not settled
    uncounted: bool  # part of the period was neither settled nor in the speed layer's window
    visitors_note: str  # what a visitor count means over the period (from the query layer)

    @property
    def partial(self) -> bool:
        return bool(self.unsettled_days)


def period_range(period: Period, tz: str) -> Range:
    """The query layer's range of ``period`` in zone ``tz``: what ``from``/``to`` dates give the API."""
    zone = ZoneInfo(tz)
    start, end = period.bounds(zone)
    return Range(start, end, zone)


def unsettled_days(svc: QueryService, site: QuerySite, period: Period) -> list[str]:
    """The days of ``period`` the batch layer has not completed (empty: every figure is exact)."""
    start, _ = period.bounds(ZoneInfo(site.tz))
    settled = svc.settlement(site, start).days
    return [day for day in period.days() if day not in settled]


def change(value: object, before: object, previous_partial: bool) -> float | None:
    """The API's change rule (:meth:`QueryService.aggregate`): relative, to 6 places; None when
    either side is unknown, the previous value is 0, or the previous period is partly uncounted."""
    if previous_partial or not isinstance(value, int | float) or not isinstance(before, int | float) or not before:
        return None
    return round((value - before) / before, 6)


def build_report(
    svc: QueryService,
    conversions: Conversions,
    site: QuerySite,
    site_name: str,
    period: Period,
    goals: Sequence[GoalSpec],
) -> Report:
    """The figures of ``period`` for ``site`` (and its ``goals``), read through the query layer."""
    rng = period_range(period, site.tz)
    previous = period.previous()
    current = svc.aggregate(site, rng, compare=False)
    before = svc.aggregate(site, period_range(previous, site.tz), compare=False)
    before_partial = before["sources"]["missing"]["buckets"] > 0
    totals = {}
    for name in TOTALS:
        value = current["results"][name]["value"]
        prior = before["results"][name]["value"]
        totals[name] = Total(value, prior, change(value, prior, before_partial))
    pages = svc.breakdown(site, "page", rng, TOP, 1, BREAKDOWN_METRICS)
    referrers = svc.breakdown(site, "ref", rng, TOP, 1, BREAKDOWN_METRICS)
    goal_rows = conversions.goals(site, rng, goals)["results"] if goals else []
    series = svc.timeseries(site, "visitors", "day", rng)
    sources = current["sources"]
    batch_days = set(sources["batch"]["days"])
    return Report(
        site_id=site.site_id,
        site_name=site_name,
        tz=site.tz,
        period=period,
        previous=previous,
        totals=totals,
        top_pages=list(pages["results"]),
        top_referrers=list(referrers["results"]),
        goals=list(goal_rows),
        daily_visitors=[(dt.datetime.fromisoformat(p["t"]), p["value"]) for p in series["points"]],
        unsettled_days=[day for day in period.days() if day not in batch_days],
        uncounted=sources["missing"]["buckets"] > 0,
        visitors_note=next((n for n in sources["notes"] if n.startswith("visitors:")), ""),
    )
