"""Pure helpers for the dashboard's tables: columns, rows, drill-down plans, health rows.

Table cells are rendered by Dash's DataTable as text (no markdown, no links), so values
from traffic are shown exactly as they are and can never become markup.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from dash.dash_table.Format import Format, Scheme, Symbol

from dashboard.figures import shown_value
from footfall.vocabulary import API_DIMENSIONS, FILTER_DIMENSIONS, VALUE_OTHER
from query.export import to_csv

DIMENSION_TITLES = {
    "pages": "Pages",
    "entry_pages": "Entry pages",
    "referrers": "Referrers",
    "referrer_urls": "Referrer URLs",
    "ref_types": "Referrer types",
    "utm_sources": "UTM sources",
    "utm_mediums": "UTM mediums",
    "utm_campaigns": "UTM campaigns",
    "browsers": "Browsers",
    "os": "Operating systems",
    "devices": "Devices",
    "countries": "Countries",
    "events": "Custom events",
}
VALUE_TITLES = {
    "pages": "Page",
    "entry_pages": "Entry page",
    "referrers": "Referrer",
    "referrer_urls": "Referrer URL",
    "ref_types": "Type",
    "utm_sources": "Source",
    "utm_mediums": "Medium",
    "utm_campaigns": "Campaign",
    "browsers": "Browser",
    "os": "OS",
    "devices": "Device",
    "countries": "Country",
    "events": "Event",
}
assert set(DIMENSION_TITLES) == set(API_DIMENSIONS), "every API dimension has a tab"
# Clicking a row filters by it and, for the two halves of the referrer→page flows, shows the other half.
PARTNER = {"pages": "referrers", "referrers": "pages"}
TABLE_LIMIT = 100  # rows per breakdown table (the CSV export has them all, up to 1,000 per request)
INT = Format(group=",")


def breakdown_metrics(dimension: str, store_dimension: str | None = None) -> tuple[str, ...]:
    """The columns of table ``dimension`` when it is read as ``store_dimension`` (default: the
    tab's own, see :class:`BreakdownPlan`).

    Sessions, bounce rate and duration exist per entry page only, custom events are counted
    in events (they are not page views), and engagement exists for the pages table (time on
    page, scroll depth) and the referrers table (engaged time) read on their own: the
    referrer → page pairs a filter reads carry no engagement (see the query service)."""
    store = store_dimension or API_DIMENSIONS[dimension]
    if store == "entry_page":
        return ("pageviews", "visitors", "sessions", "bounce_rate", "visit_duration")
    if store == "event":
        return ("events", "visitors")
    if store == "page":
        return ("pageviews", "visitors", "time_on_page", "scroll_depth")
    if store == "ref":
        return ("pageviews", "visitors", "engaged_time")
    return ("pageviews", "visitors")


COUNT_TITLES = {"pageviews": "Page views", "visitors": "Visitors", "sessions": "Sessions", "events": "Events"}
RATE = Format(precision=1, scheme=Scheme.percentage)
# Seconds and percent stay numbers, so the table sorts them as numbers; the unit is a suffix.
SECONDS = Format(precision=1, scheme=Scheme.fixed, group=",").symbol(Symbol.yes).symbol_suffix(" s")
PERCENT_OF_PAGE = Format(precision=0, scheme=Scheme.fixed).symbol(Symbol.yes).symbol_suffix(" %")
RATIO_COLUMNS: dict[str, tuple[str, Format]] = {
    "bounce_rate": ("Bounce rate", RATE),
    "visit_duration": ("Duration (s)", Format(precision=0, scheme=Scheme.fixed)),
    "time_on_page": ("Time on page", SECONDS),  # engaged seconds per page view
    "scroll_depth": ("Scroll depth", PERCENT_OF_PAGE),  # mean deepest scroll, 0-100
    "engaged_time": ("Engaged time", SECONDS),  # engaged seconds in all
}


def breakdown_columns(dimension: str, store_dimension: str | None = None) -> list[dict[str, object]]:
    """The DataTable columns of :func:`breakdown_metrics`, the value first."""
    columns: list[dict[str, object]] = [{"name": VALUE_TITLES.get(dimension, "Value"), "id": "value"}]
    for metric in breakdown_metrics(dimension, store_dimension):
        if metric in COUNT_TITLES:
            columns.append({"name": COUNT_TITLES[metric], "id": metric, "type": "numeric", "format": INT})
        else:
            title, fmt = RATIO_COLUMNS[metric]
            columns.append({"name": title, "id": metric, "type": "numeric", "format": fmt})
    return columns


def goal_breakdown_columns(dimension: str) -> list[dict[str, object]]:
    """The DataTable columns of table ``dimension`` filtered by a goal (the query service's
    ``goal_breakdown``): the value, converting visitors, their conversions and the rate."""
    return [
        {"name": VALUE_TITLES.get(dimension, "Value"), "id": "value"},
        {"name": "Converting visitors", "id": "visitors", "type": "numeric", "format": INT},
        {"name": "Conversions", "id": "conversions", "type": "numeric", "format": INT},
        {"name": "Conversion rate", "id": "conversion_rate", "type": "numeric", "format": RATE},
    ]


@dataclass(frozen=True, slots=True)
class BreakdownPlan:
    """How to fill a breakdown table under the current filter."""

    store_dimension: str  # the query service's name ("page", "refpage", ...)
    ref: str | None = None
    path: str | None = None
    note: str | None = None  # said above the table when the filter cannot apply


def plan_breakdown(dimension: str, filter_: Mapping[str, str] | None) -> BreakdownPlan:
    """The breakdown query of table ``dimension`` with ``filter_`` (``{"dimension", "value"}``) set.

    The rollups keep each dimension on its own except referrer → page pairs, so a filter
    narrows the pages table (by referrer) and the referrers table (by page); any other
    table under a filter shows the whole site and says so."""
    store = API_DIMENSIONS[dimension]
    if not filter_:
        return BreakdownPlan(store)
    fdim, value = filter_.get("dimension"), filter_.get("value")
    if dimension == "pages" and fdim == "referrers":
        return BreakdownPlan("refpage", ref=value)
    if dimension == "referrers" and fdim == "pages":
        return BreakdownPlan("refpage", path=value)
    return BreakdownPlan(
        store,
        note=f"This table is not filtered: only pages and referrers can be combined. "
        f"It shows the whole site; the chart above is filtered by {VALUE_TITLES.get(str(fdim), fdim)}.",
    )


def drill(dimension: str, value: object) -> tuple[dict[str, str] | None, str]:
    """What clicking ``value`` in table ``dimension`` does: the filter to set and the tab to show."""
    if dimension not in FILTER_DIMENSIONS or not isinstance(value, str) or not value:
        return None, dimension
    if value == VALUE_OTHER:  # many values counted together: no one value to filter by
        return None, dimension
    return {"dimension": dimension, "value": value}, PARTNER.get(dimension, dimension)


def filter_label(filter_: Mapping[str, str]) -> str:
    return f"{VALUE_TITLES.get(filter_['dimension'], filter_['dimension'])} is {filter_['value']}"


# -- live view ----------------------------------------------------------------------------


def top_rows(rows: Iterable[Mapping[str, object]]) -> list[dict[str, object]]:
    return [{"value": shown_value(r["value"]), "pageviews": r["pageviews"], "visitors": r["visitors"]} for r in rows]


def value_rows(rows: Iterable[Mapping[str, object]]) -> list[dict[str, object]]:
    """Breakdown rows for a DataTable: the value as shown, and as stored in ``id`` (what a click hands back)."""
    return [{**row, "value": shown_value(row["value"]), "id": row["value"]} for row in rows]


def rising_rows(live: Mapping[str, object]) -> list[dict[str, object]]:
    """Rising pages and referrers in one list, strongest surge first."""
    rows = [
        {"kind": kind, "value": shown_value(r["value"]), "recent": r["recent"],
         "usual": round(float(r["baseline_mean"]), 1), "z": round(float(r["z"]), 1)}
        for kind, key in (("Page", "rising_pages"), ("Referrer", "rising_referrers"))
        for r in live.get(key, [])  # type: ignore[union-attr]
    ]  # fmt: skip
    return sorted(rows, key=lambda r: -r["z"])


# -- health -------------------------------------------------------------------------------


def ago(then_ms: int | None, now_ms: int) -> str:
    """``then_ms`` as "12 s ago", "3 min ago", "2 h 5 min ago", "4 days ago" ("never" for None)."""
    if then_ms is None:
        return "never"
    seconds = max(0, (now_ms - then_ms) // 1000)
    if seconds < 60:
        return f"{seconds} s ago"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes} min ago"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min ago"
    return f"{hours // 24} days ago"


def _when(value: object, tz: ZoneInfo) -> str:
    if isinstance(value, dt.datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
        return moment.astimezone(tz).strftime("%Y-%m-%d %H:%M")
    return "" if value is None else str(value)


def rollup_rows(runs: Iterable[Mapping[str, object]], tz: ZoneInfo) -> list[dict[str, object]]:
    """``batch_runs`` documents (newest day first) as table rows, times in the site's zone."""
    return [
        {
            "day": r.get("day"),
            "status": r.get("status", ""),
            "computed_at": _when(r.get("computed_at"), tz),
            "events_read": r.get("events_read"),
            "pageviews": r.get("pageviews"),
            "spark_master": r.get("spark_master", ""),
        }
        for r in runs
    ]


def drift_rows(docs: Iterable[Mapping[str, object]], tz: ZoneInfo) -> list[dict[str, object]]:
    """``reconciliation`` documents as rows: realtime vs batch page views and visitors."""
    return [
        {
            "day": d.get("day"),
            "realtime_pageviews": d.get("realtime_pageviews"),
            "batch_pageviews": d.get("batch_pageviews"),
            "pageviews_drift_pct": d.get("pageviews_drift_pct"),
            "visitors_drift_pct": d.get("visitors_drift_pct"),
            "coverage_pct": None if d.get("coverage") is None else round(float(d["coverage"]) * 100, 1),
            "checked_at": _when(d.get("checked_at"), tz),
        }
        for d in docs
    ]


def invalid_rows(stats: Mapping[str, int]) -> list[dict[str, object]]:
    """Invalid events by reason (``invalid:<reason>`` of the realtime stats), most first."""
    rows = [{"reason": k.split(":", 1)[1], "events": v} for k, v in stats.items() if k.startswith("invalid:")]
    return sorted(rows, key=lambda r: (-int(r["events"]), str(r["reason"])))


def csv_text(rows: Iterable[Mapping[str, object]], metrics: Iterable[str]) -> str:
    """The Download CSV of a breakdown table: the API's CSV of the same rows, so an empty
    table still has its header row (``value`` and the metrics)."""
    return to_csv({"results": list(rows), "metrics": list(metrics)})
