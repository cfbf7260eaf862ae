"""The lambda merge over in-memory stores: every answer against the events themselves.

A site in Europe/Berlin with traffic every 20 minutes from 23 to 27 October 2026, whose clocks
fall back on the 25th (a 25-hour day). The 24th and 25th are settled (the batch layer), the
speed layer keeps two days, and it is now 27 October, 10:20: the 23rd is older than the
window and never rolled up (missing), the 26th and 27th are recent.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest

from footfall.goals import EVENT, FUNNEL_TIME_BOUNDS_MS, PAGE, FunnelSpec, GoalSpec
from historical.buckets import day_buckets
from query.conversions import Conversions
from query.params import Filter, Range
from query.plan import realtime_window_start
from query.service import PREVIOUS_PARTIAL, QueryService, QuerySite
from tests.unit.query.memory_stores import SITE, Hit, MemoryCounters, MemoryRollups

TZ = ZoneInfo("Europe/Berlin")
NOW = dt.datetime(2026, 10, 27, 10, 20, tzinfo=TZ)
RETENTION_S = 2 * 86_400
WINDOW = realtime_window_start(NOW.astimezone(dt.UTC), RETENTION_S)
SETTLED = {"2026-10-24", "2026-10-25"}
PAGES = ("/", "/pricing", "/signup", "/blog/a")
REFS = ("(direct)", "google.com", "news.ycombinator.com")
SIGNUP = GoalSpec("1", PAGE, name="Sign-up", path="/signup")
PRO = GoalSpec("2", EVENT, name="Pro", event="purchase", prop="plan", value="pro")
SITE_INFO = QuerySite(SITE, TZ.key)


def traffic() -> list[Hit]:
    """A page view every 20 minutes of UTC time (so the repeated hour has its own), a purchase every 3 hours."""
    hits = []
    at = dt.datetime(2026, 10, 23, tzinfo=TZ).astimezone(dt.UTC)
    n = 0
    while at < NOW:
        hits.append(Hit(at, PAGES[n % 4], REFS[n % 3], f"v{n % 7}"))
        if n % 9 == 0:
            hits.append(
                Hit(at, "/checkout", visitor=f"v{n % 7}", type="purchase", props={"plan": "pro" if n % 2 else "free"})
            )
        at += dt.timedelta(minutes=20)
        n += 1
    return hits


HITS = traffic()


def counted(hit: Hit) -> bool:
    """Whether the merge can count ``hit``: on a settled day, or recent enough for the speed layer."""
    return hit.at.astimezone(TZ).date().isoformat() in SETTLED or hit.at >= WINDOW


def truth(start: dt.datetime, end: dt.datetime, kind: str = "pageview") -> list[Hit]:
    return [h for h in HITS if start <= h.at < end and h.type == kind and counted(h)]


def daily_visitors(hits: list[Hit]) -> int:
    """Visitors as the merge counts them over days: distinct per site-local day, summed."""
    return len({(h.at.astimezone(TZ).date(), h.visitor) for h in hits})


def service(goal_ids: dict[str, set[str]] | None = None, funnels: dict | None = None) -> QueryService:
    rollups = MemoryRollups(TZ.key, HITS, SETTLED, goals=[SIGNUP, PRO], goal_ids=goal_ids, funnels=funnels)
    return QueryService(rollups, MemoryCounters(HITS, WINDOW), RETENTION_S, now=lambda: NOW)


def local(day: int, hour: int = 0) -> dt.datetime:
    return dt.datetime(2026, 10, day, hour, tzinfo=TZ)


def days(first: int, last: int) -> Range:
    """Local days ``first`` to ``last`` of October, whole."""
    return Range(local(first), local(last + 1), TZ)


def test_a_range_across_the_seam_counts_each_page_view_once() -> None:
    answer = service().aggregate(SITE_INFO, days(23, 27), compare=False)
    expected = truth(local(23), local(28))
    assert answer["results"]["pageviews"]["value"] == len(expected)
    assert answer["results"]["visitors"]["value"] == daily_visitors(expected)
    sources = answer["sources"]
    assert sources["batch"]["days"] == sorted(SETTLED)
    assert sources["realtime"]["buckets"] > 0
    missing = sources["missing"]
    assert (dt.datetime.fromisoformat(missing["from"]), dt.datetime.fromisoformat(missing["to"])) == (
        local(23),
        local(24),
    )
    assert any("not rolled up yet: not counted" in note for note in sources["notes"])


def test_sessions_come_from_the_settled_days_only() -> None:
    answer = service().aggregate(SITE_INFO, days(24, 26), compare=False)
    sessions = answer["results"]["sessions"]["value"]
    assert sessions == len({(h.at.astimezone(TZ).date(), h.visitor) for h in truth(local(24), local(26))})
    assert "sessions, bounce_rate and visit_duration cover the settled days only" in answer["sources"]["notes"]


def test_compare_with_a_previous_period_partly_missing_gives_no_change() -> None:
    answer = service().aggregate(SITE_INFO, days(26, 27), compare=True)
    pageviews = answer["results"]["pageviews"]
    assert pageviews["previous"] == len(truth(local(24), local(26)))
    assert pageviews["change"] is not None  # 24th and 25th are settled: a whole previous period
    earlier = service().aggregate(SITE_INFO, days(25, 26), compare=True)
    assert earlier["results"]["pageviews"]["previous"] == len(truth(local(23), local(25)))
    assert earlier["results"]["pageviews"]["change"] is None
    assert PREVIOUS_PARTIAL in earlier["sources"]["notes"]


def test_hours_of_a_day_whose_clock_falls_back_are_25_buckets_from_the_rollup() -> None:
    series = service().timeseries(SITE_INFO, "pageviews", "hour", days(25, 25))
    points = series["points"]
    assert len(points) == 25
    assert {p["source"] for p in points} == {"batch"}
    buckets = day_buckets(dt.date(2026, 10, 25), TZ)
    assert [p["value"] for p in points] == [len(truth(b.start, b.end)) for b in buckets]
    assert [p["t"][:19] for p in points].count("2026-10-25T02:00:00") == 2  # the repeated hour, twice


def test_hours_across_the_seam_come_from_each_layer_exactly() -> None:
    series = service().timeseries(SITE_INFO, "pageviews", "hour", Range(local(25, 18), local(26, 6), TZ))
    sources = [p["source"] for p in series["points"]]
    assert sources == ["batch"] * 6 + ["realtime"] * 6
    starts = [dt.datetime.fromisoformat(p["t"]) for p in series["points"]]
    for point, start in zip(series["points"], starts, strict=True):
        assert point["value"] == len(truth(start, start + dt.timedelta(hours=1)))


def test_days_are_missing_batch_or_realtime_and_never_guessed() -> None:
    series = service().timeseries(SITE_INFO, "pageviews", "day", days(23, 27))
    assert [p["source"] for p in series["points"]] == ["missing", "batch", "batch", "realtime", "realtime"]
    assert series["points"][0]["value"] is None
    for point, day in zip(series["points"][1:], range(24, 28), strict=True):
        assert point["value"] == len(truth(local(day), local(day + 1)))
    assert any("null where the period is older" in note for note in series["sources"]["notes"])


def test_a_filtered_series_counts_one_value_on_both_sides() -> None:
    series = service().timeseries(SITE_INFO, "visitors", "day", days(24, 27), Filter("page", "/pricing"))
    for point, day in zip(series["points"], range(24, 28), strict=True):
        views = [h for h in truth(local(day), local(day + 1)) if h.path == "/pricing"]
        assert point["value"] == len({h.visitor for h in views})


def test_a_range_wholly_missing_is_unknown_not_zero() -> None:
    answer = service().aggregate(SITE_INFO, days(23, 23), compare=False)
    assert answer["results"]["pageviews"]["value"] is None
    assert answer["results"]["visitors"]["value"] is None
    assert answer["sources"]["batch"]["days"] == []


@pytest.mark.parametrize("dim", ["page", "ref"])
def test_a_breakdown_adds_the_recent_part_to_the_settled_one(dim: str) -> None:
    answer = service().breakdown(SITE_INFO, dim, days(24, 27), limit=10, page=1, metrics=("pageviews", "visitors"))
    expected = truth(local(24), local(28))
    values = {h.value(dim) for h in expected}
    assert answer["total"] == len(values)
    for row in answer["results"]:
        hits = [h for h in expected if h.value(dim) == row["value"]]
        assert row["pageviews"] == len(hits)
        assert row["visitors"] == daily_visitors(hits)
    ranked = [row["pageviews"] for row in answer["results"]]
    assert ranked == sorted(ranked, reverse=True)


def test_goals_count_settled_and_recent_conversions() -> None:
    answer = Conversions(service()).goals(SITE_INFO, days(24, 27), [SIGNUP, PRO])
    expected = truth(local(24), local(28)) + truth(local(24), local(28), kind="purchase")
    by_id = {row["goal_id"]: row for row in answer["results"]}
    for goal in (SIGNUP, PRO):
        hits = [h for h in expected if goal.matches(h.type, h.path, h.props)]
        assert hits, goal
        assert by_id[goal.goal_id]["events"] == len(hits)
        assert by_id[goal.goal_id]["visitors"] == daily_visitors(hits)
    visitors = daily_visitors(truth(local(24), local(28), kind="pageview"))
    assert by_id["1"]["conversion_rate"] == round(by_id["1"]["visitors"] / visitors, 6)


def test_a_goal_newer_than_a_settled_day_counts_nothing_there_and_says_so() -> None:
    svc = service(goal_ids={"2026-10-24": {"1"}})  # the 24th was rolled up before goal 2
    series = Conversions(svc).goal_series(SITE_INFO, days(24, 26), PRO)
    assert [row["source"] for row in series] == ["batch", "batch", "realtime"]
    assert series[0]["events"] == 0
    for row, day in zip(series[1:], (25, 26), strict=True):
        hits = [h for h in truth(local(day), local(day + 1), kind="purchase") if PRO.matches(h.type, h.path, h.props)]
        assert row["events"] == len(hits)
    notes = Conversions(svc).goals(SITE_INFO, days(24, 26), [PRO])["sources"]["notes"]
    assert any("goal 2 (Pro): 1 settled day(s) from 2026-10-24 to 2026-10-24" in note for note in notes)


def test_revenue_sums_settled_and_recent_days_per_currency() -> None:
    """A revenue goal over both layers: per currency, exact decimals, invalid amounts counted apart;
    and a settled day rolled up before the goal had revenue counts none and is named."""
    paid = GoalSpec("3", EVENT, name="Paid", event="order", revenue_prop="amount", currency_prop="currency")
    worth = [("19.99", "EUR"), (5, "usd"), ("lots", "EUR"), (0.1 + 0.2, "EUR"), (7, "EURO")]
    orders = [Hit(h.at, "/checkout", visitor=h.visitor, type="order", props=dict(zip(("amount", "currency"),
              worth[n % len(worth)], strict=True))) for n, h in enumerate(HITS[::5])]  # fmt: skip
    hits = HITS + orders
    rollups = MemoryRollups(TZ.key, hits, SETTLED, goals=[SIGNUP, paid])
    svc = QueryService(rollups, MemoryCounters(hits, WINDOW), RETENTION_S, now=lambda: NOW)
    (row,) = Conversions(svc).goals(SITE_INFO, days(24, 27), [paid])["results"]
    counted_orders = [h for h in orders if counted(h) and h.at >= local(24)]
    units: dict[str, list[int]] = {}
    for h in counted_orders:
        amount, currency = h.props["amount"], str(h.props["currency"])
        if amount != "lots" and currency != "EURO":
            units.setdefault(currency.upper(), []).append(
                int(Decimal(str(amount)).quantize(Decimal("0.0001")) * 10_000)
            )
    assert {c["currency"]: (c["conversions"], Decimal(c["total"])) for c in row["revenue"]["currencies"]} == {
        currency: (len(amounts), Decimal(sum(amounts)) / 10_000) for currency, amounts in units.items()
    }
    assert row["revenue"]["without_revenue"] == len(counted_orders) - sum(map(len, units.values())) > 0
    assert row["events"] == len(counted_orders)

    before = MemoryRollups(TZ.key, hits, SETTLED, goals=[SIGNUP, paid], goal_ids={"2026-10-24": {"3"}})
    before.goals = [SIGNUP, dataclasses.replace(paid, revenue_prop="", currency_prop="")]
    svc = QueryService(before, MemoryCounters(hits, WINDOW), RETENTION_S, now=lambda: NOW)
    notes = Conversions(svc).goals(SITE_INFO, days(24, 24), [paid])["sources"]["notes"]
    assert any("before the goal counted revenue" in note for note in notes)


def _funnel_doc(day: str, visitors: tuple[int, int], median_ms: float) -> dict[str, object]:
    times = [0] * (len(FUNNEL_TIME_BOUNDS_MS) + 1)
    times[20] = visitors[1]
    return {"day": day, "funnel_id": "7", "name": "Sign-up path", "steps": [
        {"visitors": visitors[0], "median_ms": None, "times_ms": [0] * len(times)},
        {"visitors": visitors[1], "median_ms": median_ms, "times_ms": times},
    ]}  # fmt: skip


def test_a_funnel_sums_the_settled_days_and_names_the_rest() -> None:
    funnels = {"7": [_funnel_doc("2026-10-24", (10, 4), 30_000.0), _funnel_doc("2026-10-25", (6, 3), 45_000.0)]}
    spec = FunnelSpec("7", (GoalSpec("a", PAGE, path="/pricing"), SIGNUP), name="Sign-up path")
    answer = Conversions(service(funnels=funnels)).funnel(SITE_INFO, spec, days(24, 27))
    assert [s["visitors"] for s in answer["steps"]] == [16, 7]
    assert answer["steps"][1]["conversion_from_previous"] == round(7 / 16, 6)
    assert answer["steps"][1]["median_estimated"] is True  # two days had visitors at the step
    assert answer["sources"]["batch"]["days"] == sorted(SETTLED)
    assert any("counted by the nightly rollup only" in note for note in answer["sources"]["notes"])
    one_day = Conversions(service(funnels=funnels)).funnel(SITE_INFO, spec, days(25, 25))
    assert one_day["steps"][1]["median_ms_from_previous"] == 45_000.0
    assert one_day["steps"][1]["median_estimated"] is False
