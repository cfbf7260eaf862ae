"""Imported history as the merge's third source, over in-memory stores.

The world of :mod:`tests.unit.query.test_merge` (Europe/Berlin; the 24th and 25th October
settled, the 23rd older than the realtime window and never rolled up), plus an import covering
the 21st to the 24th: it answers the days the site never settled (21st to 23rd) and, on the 24th
that both hold, loses to the site's own rollup unless the site prefers its imports.
"""

from __future__ import annotations

from collections.abc import Mapping

from historical.reads import Sums
from query.conversions import Conversions
from query.params import Filter
from query.service import IMPORTED_ENGAGEMENT_NOTE, QueryService, QuerySite
from tests.unit.query.memory_stores import SITE, MemoryCounters, MemoryRollups
from tests.unit.query.test_merge import HITS, NOW, RETENTION_S, SETTLED, SITE_INFO, TZ, WINDOW, days, local, truth

IMPORT_ID = "imp1"
# Per imported day: totals (visits as sessions, total visit seconds) and page rows.
TOTALS = {
    "2026-10-21": Sums(pageviews=40, visitors=11, sessions=15, bounces=6, duration_s=900.0),
    "2026-10-22": Sums(pageviews=0, visitors=0),
    "2026-10-23": Sums(pageviews=52, visitors=13, sessions=20, bounces=5, duration_s=1200.0),
    "2026-10-24": Sums(pageviews=999, visitors=99, sessions=50, bounces=10, duration_s=5000.0),
}
PAGES = {
    "2026-10-21": {"/": Sums(pageviews=30, visitors=9), "/old": Sums(pageviews=10, visitors=4)},
    "2026-10-23": {"/": Sums(pageviews=40, visitors=10), "/pricing": Sums(pageviews=12, visitors=5)},
    "2026-10-24": {"/": Sums(pageviews=999, visitors=99)},
}
WINS = QuerySite(SITE, TZ.key, imports_win=True)


class MemoryImports:
    """:class:`query.stores.ImportedHistory` over :data:`TOTALS` and :data:`PAGES`, one import."""

    def days(self, site: str, first: str, last: str) -> dict[str, str]:
        return {day: IMPORT_ID for day in TOTALS if site == SITE and first <= day <= last}

    def daily(self, site: str, days: Mapping[str, str]) -> dict[str, Sums]:
        return {day: TOTALS[day].copy() for day in days if day in TOTALS}

    def breakdown(self, site: str, dim: str, days: Mapping[str, str]) -> dict[str, Sums]:
        merged: dict[str, Sums] = {}
        for day in days:
            for value, sums in (PAGES.get(day, {}) if dim == "page" else {}).items():
                merged.setdefault(value, Sums()).include(sums)
        return merged

    def filtered_daily(self, site: str, dim: str, value: str, days: Mapping[str, str]) -> dict[str, Sums]:
        return {day: PAGES[day][value] for day in days if dim == "page" and value in PAGES.get(day, {})}


def service() -> QueryService:
    rollups = MemoryRollups(TZ.key, HITS, SETTLED)
    return QueryService(rollups, MemoryCounters(HITS, WINDOW), RETENTION_S, now=lambda: NOW, imported=MemoryImports())


def pageviews(first: int, last: int) -> int:
    return len(truth(local(first), local(last + 1)))


def test_imported_days_answer_where_the_site_settled_nothing_and_its_own_days_win_by_default() -> None:
    series = service().timeseries(SITE_INFO, "pageviews", "day", days(21, 26))
    points = series["points"]
    assert [p["source"] for p in points] == ["imported", "imported", "imported", "batch", "batch", "realtime"]
    assert [p["value"] for p in points[:3]] == [40, 0, 52]
    assert [p["value"] for p in points[3:]] == [pageviews(d, d) for d in (24, 25, 26)]
    imported = series["sources"]["imported"]
    assert (imported["days"], imported["imports"]) == (["2026-10-21", "2026-10-22", "2026-10-23"], [IMPORT_ID])
    assert series["sources"]["batch"]["days"] == ["2026-10-24", "2026-10-25"]

    theirs = service().timeseries(WINS, "pageviews", "day", days(21, 26))
    assert [p["source"] for p in theirs["points"]][:4] == ["imported"] * 4
    assert theirs["points"][3]["value"] == 999


def test_ratios_of_an_imported_day_come_from_its_visits() -> None:
    series = service().timeseries(SITE_INFO, "visit_duration", "day", days(21, 22))
    assert [p["value"] for p in series["points"]] == [60.0, None]  # 900 s over 15 visits; no visits
    bounce = service().timeseries(SITE_INFO, "bounce_rate", "day", days(23, 23))
    assert bounce["points"][0]["value"] == 0.25


def test_hours_of_an_imported_day_are_null_not_zero() -> None:
    series = service().timeseries(SITE_INFO, "pageviews", "hour", days(23, 23))
    assert {(p["source"], p["value"]) for p in series["points"]} == {("imported", None)}
    assert any("imported days hold whole days only" in note for note in series["sources"]["notes"])


def test_totals_add_imported_days_to_the_sites_own() -> None:
    answer = service().aggregate(SITE_INFO, days(21, 25), compare=False)
    results = answer["results"]
    assert results["pageviews"]["value"] == 40 + 0 + 52 + pageviews(24, 25)
    assert results["visitors"]["value"] == 11 + 13 + sum(
        len({h.visitor for h in truth(local(d), local(d + 1))}) for d in (24, 25)
    )
    assert answer["sources"]["imported"]["days"] == ["2026-10-21", "2026-10-22", "2026-10-23"]
    only = service().aggregate(SITE_INFO, days(21, 23), compare=False)["results"]
    assert only["sessions"]["value"] == 35
    assert only["bounce_rate"]["value"] == round(11 / 35, 6)
    assert only["visit_duration"]["value"] == round(2100 / 35, 3)


def test_a_page_breakdown_adds_imported_rows_and_leaves_their_engagement_out() -> None:
    metrics = ("pageviews", "visitors", "time_on_page", "engaged_time")
    answer = service().breakdown(SITE_INFO, "page", days(21, 24), limit=50, page=1, metrics=metrics)
    rows = {row["value"]: row for row in answer["results"]}
    own = [h for h in truth(local(24), local(25)) if h.path == "/"]
    assert rows["/"]["pageviews"] == 30 + 40 + len(own)
    assert rows["/old"]["pageviews"] == 10
    assert rows["/old"]["engaged_time"] == 0  # the range has own days: the row's own engaged time, none
    assert IMPORTED_ENGAGEMENT_NOTE in answer["sources"]["notes"]
    imported_only = service().breakdown(SITE_INFO, "page", days(21, 23), limit=50, page=1, metrics=metrics)
    assert {(row["time_on_page"], row["engaged_time"]) for row in imported_only["results"]} == {(None, None)}
    assert [row["value"] for row in imported_only["results"]] == ["/", "/pricing", "/old"]


def test_a_breakdown_an_import_does_not_hold_leaves_its_days_out_and_says_so() -> None:
    answer = service().breakdown(SITE_INFO, "ref_type", days(21, 23), limit=10, page=1, metrics=("pageviews",))
    assert answer["results"] == []
    assert "imports hold no ref_type breakdown: imported days are not included" in answer["sources"]["notes"]


def test_a_filtered_series_reads_the_imported_rows_of_its_value() -> None:
    series = service().timeseries(SITE_INFO, "pageviews", "day", days(21, 23), Filter("page", "/pricing"))
    assert [p["value"] for p in series["points"]] == [0, 0, 12]
    other = service().timeseries(SITE_INFO, "pageviews", "day", days(21, 21), Filter("ref_type", "search"))
    assert other["points"][0]["value"] is None
    assert any("imports hold no ref_type breakdown" in note for note in other["sources"]["notes"])


def test_goals_and_funnels_say_imported_days_count_nothing_for_them() -> None:
    answer = Conversions(service()).goals(SITE_INFO, days(21, 25), [])
    note = "imported history holds no goals: its 3 day(s) (2026-10-21 to 2026-10-23) count nothing here"
    assert note in answer["sources"]["notes"]
    settled_only = Conversions(service()).goals(SITE_INFO, days(24, 25), [])
    assert not any("imported history" in n for n in settled_only["sources"]["notes"])
