"""Date ranges, breakdown plans, drill-down and health rows: pure functions of the dashboard."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest

from api.renderers import CsvRenderer
from dashboard import tables
from dashboard.ranges import DayRange, RangeError, resolve
from footfall.vocabulary import API_DIMENSIONS

NY = ZoneInfo("America/New_York")
TODAY = dt.date(2026, 11, 4)


@pytest.mark.parametrize(("preset", "days"), [("today", 1), ("7d", 7), ("30d", 30), ("90d", 90)])
def test_presets_end_today(preset: str, days: int) -> None:
    rng = resolve(preset, "2000-01-01", "2000-01-02", TODAY)  # the picker's dates do not matter
    assert (rng.last, rng.days) == (TODAY, days)


def test_custom_range_and_its_errors() -> None:
    """Custom takes the picker's days and says what to fix when they make no range."""
    assert resolve("custom", "2026-10-01", "2026-10-03T00:00:00", TODAY) == DayRange(
        dt.date(2026, 10, 1), dt.date(2026, 10, 3)
    )
    for start, end, says in [(None, "2026-10-01", "Pick a first"), ("2026-10-05", "2026-10-01", "swap"),
                             ("x", "2026-10-01", "look like"), ("2020-01-01", "2026-10-01", "at most")]:  # fmt: skip
        with pytest.raises(RangeError, match=says):
            resolve("custom", start, end, TODAY)


def test_day_range_is_whole_local_days_across_dst() -> None:
    """[first 00:00, last+1 00:00) in the site's zone; the API's from/to name the same instants."""
    rng = DayRange(dt.date(2026, 10, 31), dt.date(2026, 11, 1))  # New York leaves DST on Nov 1
    q = rng.query_range(NY)
    assert q.start.isoformat() == "2026-10-31T00:00:00-04:00"
    assert q.end.isoformat() == "2026-11-02T00:00:00-05:00"
    assert rng.api_params() == {"from": "2026-10-31", "to": "2026-11-02"}
    assert rng.interval == "hour"
    assert DayRange(rng.first, rng.last + dt.timedelta(days=1)).interval == "day"
    assert rng.previous() == DayRange(dt.date(2026, 10, 29), dt.date(2026, 10, 30))


def test_every_api_dimension_has_a_table() -> None:
    assert set(tables.DIMENSION_TITLES) == set(API_DIMENSIONS)
    assert [c["id"] for c in tables.breakdown_columns("entry_pages")] == [
        "value", "pageviews", "visitors", "sessions", "bounce_rate", "visit_duration"
    ]  # fmt: skip
    assert [c["id"] for c in tables.breakdown_columns("countries")] == ["value", "pageviews", "visitors"]


def test_breakdown_plans_under_a_filter() -> None:
    """Pages by a referrer and referrers of a page are exact; other tables say they are unfiltered."""
    assert tables.plan_breakdown("pages", None) == tables.BreakdownPlan("page")
    ref = {"dimension": "referrers", "value": "google.com"}
    assert tables.plan_breakdown("pages", ref) == tables.BreakdownPlan("refpage", ref="google.com")
    page = {"dimension": "pages", "value": "/pricing"}
    assert tables.plan_breakdown("referrers", page) == tables.BreakdownPlan("refpage", path="/pricing")
    other = tables.plan_breakdown("countries", ref)
    assert other.store_dimension == "country"
    assert other.ref is None
    assert "not filtered" in other.note


def test_drill_sets_a_filter_and_shows_the_other_half_of_the_flows() -> None:
    assert tables.drill("referrers", "t.co") == ({"dimension": "referrers", "value": "t.co"}, "pages")
    assert tables.drill("pages", "/") == ({"dimension": "pages", "value": "/"}, "referrers")
    assert tables.drill("browsers", "Firefox") == ({"dimension": "browsers", "value": "Firefox"}, "browsers")
    assert tables.drill("entry_pages", "/") == (None, "entry_pages")  # needs sessions: not filterable
    assert tables.drill("pages", None) == (None, "pages")
    assert tables.drill("pages", {"not": "a string"}) == (None, "pages")


def test_rising_rows_merge_pages_and_referrers_by_surge() -> None:
    live = {
        "rising_pages": [{"value": "/a", "recent": 9, "baseline_mean": 1.04, "z": 3.21}],
        "rising_referrers": [{"value": "t.co", "recent": 20, "baseline_mean": 2.0, "z": 8.0}],
    }
    assert tables.rising_rows(live) == [
        {"kind": "Referrer", "value": "t.co", "recent": 20, "usual": 2.0, "z": 8.0},
        {"kind": "Page", "value": "/a", "recent": 9, "usual": 1.0, "z": 3.2},
    ]


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(0, "0 s ago"), (59, "59 s ago"), (60, "1 min ago"), (3 * 3600 + 120, "3 h 2 min ago"), (5 * 86400, "5 days ago")],
)
def test_ago(seconds: int, shown: str) -> None:
    assert tables.ago(1_000_000_000 - seconds * 1000, 1_000_000_000) == shown


def test_ago_never() -> None:
    assert tables.ago(None, 5) == "never"


def test_health_rows() -> None:
    """Rollup and drift documents become rows with times in the site's zone; invalid counts by reason."""
    at = dt.datetime(2026, 11, 2, 3, 30, tzinfo=dt.UTC)
    runs = tables.rollup_rows([{"day": "2026-11-01", "status": "complete", "computed_at": at, "events_read": 5,
                                "pageviews": 4, "spark_master": "local[*]"}], NY)  # fmt: skip
    assert runs == [{"day": "2026-11-01", "status": "complete", "computed_at": "2026-11-01 22:30", "events_read": 5,
                     "pageviews": 4, "spark_master": "local[*]"}]  # fmt: skip
    drift = tables.drift_rows([{"day": "2026-11-01", "pageviews_drift_pct": -1.5, "coverage": 0.8123}], NY)
    assert drift[0]["coverage_pct"] == 81.2
    assert drift[0]["pageviews_drift_pct"] == -1.5
    stats = {"events": 10, "invalid": 3, "invalid:too_large": 1, "invalid:invalid_field": 2}
    assert tables.invalid_rows(stats) == [
        {"reason": "invalid_field", "events": 2},
        {"reason": "too_large", "events": 1},
    ]


@pytest.mark.parametrize("dimension", ["referrers", "entry_pages"])
def test_empty_table_csv_has_its_header_like_the_api(dimension: str) -> None:
    """Download CSV of an empty table: the header row, exactly what the API's CSV of the
    same empty breakdown (value and the requested metrics) holds."""
    metrics = tables.breakdown_metrics(dimension)
    text = tables.csv_text([], metrics)
    assert text == ",".join(["value", *metrics]) + "\n"
    api_body = {"results": [], "metrics": list(metrics), "total": 0}
    assert text == CsvRenderer().render(api_body).decode()
    row = {"value": "/", **dict.fromkeys(metrics, 1)}
    assert tables.csv_text([row], metrics).splitlines()[0] == text.strip()
