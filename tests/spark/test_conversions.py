"""Custom events, their properties, goals and engaged time (spark_jobs.conversions) on tiny frames."""

from __future__ import annotations

import json

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from footfall.goals import GoalSpec
from footfall.vocabulary import MAX_ENGAGED_MS
from spark_jobs.conversions import (
    engagement_breakdowns,
    event_breakdowns,
    event_prop_breakdowns,
    goal_breakdowns,
    with_engagement,
)
from spark_jobs.transforms import breakdowns, dedupe, localize, only_humans, rollup, sessionize
from tests.spark.conftest import DAY, HOUR, MINUTE, T0

NEXT_DAY = "2025-11-25"
EVENT_DDL = (
    "site_id STRING, day STRING, dimension STRING, value STRING, pageviews BIGINT, visitors BIGINT, events BIGINT"
)
PROP_DDL = f"{EVENT_DDL}, event STRING, prop STRING, prop_value STRING"
GOAL_DDL = f"{EVENT_DDL}, name STRING, no_revenue BIGINT"
ENGAGEMENT_DDL = (
    "site_id STRING, day STRING, value STRING, engaged_ms BIGINT, engagements BIGINT, scroll_views BIGINT, "
    "scroll_sum BIGINT, dimension STRING"
)


def at(hours: float = 0, minutes: float = 0) -> int:
    return T0 + int(hours * HOUR + minutes * MINUTE)


def humans(events: DataFrame, zones: DataFrame, changes: list[tuple[str, int]]) -> DataFrame:
    """What the conversions take: localized, deduplicated human events."""
    return only_humans(localize(dedupe(events), zones, changes))


def custom(event_id: str, name: str, visitor: str | None, props: dict | None = None, **extra: object) -> dict:
    """A custom event row at 10:00 UTC on DAY."""
    row = {"event_id": event_id, "type": name, "ts": at(10), "visitor_id": visitor}
    return row | {"props": props and json.dumps(props)} | extra


def report(event_id: str, path: str | None, ms: object, depth: object = None, pageview: str | None = None, **extra):
    """An engagement report row at 12:00 UTC on DAY; ``None`` leaves a property out."""
    props = {"engaged_ms": ms, "scroll_depth": depth, "pageview_id": pageview}
    props = {k: v for k, v in props.items() if v is not None}
    row = {"event_id": event_id, "type": "engagement", "ts": at(12), "path": path, "visitor_id": "v"}
    return row | {"props": json.dumps(props)} | extra


def test_custom_events_per_name_leave_out_builtin_types_and_bots(make_events, make_zones, changes):
    """Page views, requests and engagement reports are no custom events; bots and duplicates never count."""
    events = make_events(
        custom("c1", "signup", "a"),
        custom("c1", "signup", "a", received_at=at(11)),  # an archived duplicate
        custom("c2", "signup", "a"),
        custom("c3", "signup", "b"),
        custom("c4", "signup", "bot", is_bot=True),
        custom("c5", "outbound", None),
        {"event_id": "p", "type": "pageview", "ts": at(10), "visitor_id": "a"},
        {"event_id": "r", "type": "request", "ts": at(10), "visitor_id": "a"},
        report("e", "/", 1000),
    )
    got = event_breakdowns(humans(events, make_zones({}), changes))
    expected = [("s", DAY, "event", "signup", 0, 2, 3), ("s", DAY, "event", "outbound", 0, 0, 1)]
    assertDataFrameEqual(got, events.sparkSession.createDataFrame(expected, EVENT_DDL))


def test_property_values_beyond_the_top_count_as_other(make_events, make_zones, changes):
    """Top 3 values by events, ties by text ascending; the rest summed under (other) with distinct
    visitors; numbers, booleans and null read as prop_text gives them."""
    events = make_events(
        custom("e1", "buy", "a", {"plan": "pro", "n": 3.0}),
        custom("e2", "buy", "b", {"plan": "pro", "n": True}),
        custom("e3", "buy", "a", {"plan": "free", "n": None}),  # free, basic, team, zeta tie: the first two stay
        custom("e4", "buy", "c", {"plan": "basic"}),
        custom("e5", "buy", "c", {"plan": "team"}),
        custom("e6", "buy", "d", {"plan": "zeta"}),
        custom("e7", "buy", "bot", {"plan": "team"}, is_bot=True),
    )
    got = event_prop_breakdowns(humans(events, make_zones({}), changes), top=3)

    def row(prop: str, value: str, visitors: int, count: int) -> tuple:
        return ("s", DAY, "event_prop", f"buy\x1f{prop}\x1f{value}", 0, visitors, count, "buy", prop, value)

    expected = [
        row("plan", "pro", 2, 2),
        row("plan", "basic", 1, 1),
        row("plan", "free", 1, 1),
        row("plan", "(other)", 2, 2),  # team (c), zeta (d)
        row("n", "3", 1, 1),
        row("n", "true", 1, 1),
        row("n", "", 1, 1),
    ]
    assertDataFrameEqual(got, events.sparkSession.createDataFrame(expected, PROP_DDL))


def test_goals_count_conversions_per_site_with_a_row_for_every_goal_and_day(make_events, make_zones, changes):
    """Page goals by path pattern on page views only; event goals by name and property text; each
    site's goals only on its own events; goals nothing reached get zeros on every day."""
    goals = {
        "s": [
            GoalSpec("g1", "page", name="Docs", path="/docs/*"),
            GoalSpec("g2", "event", name="Pro signup", event="signup", prop="plan", value="pro"),
            GoalSpec("g3", "event", name="Any signup", event="signup"),
            GoalSpec("g4", "page", name="Never", path="/never"),
        ],
        "t": [GoalSpec("g5", "page", name="Home", path="/")],
    }
    events = make_events(
        {"event_id": "p1", "ts": at(9), "visitor_id": "a", "path": "/docs/a/b"},
        {"event_id": "p2", "ts": at(9), "visitor_id": "a", "path": "/docs/c"},
        {"event_id": "p3", "ts": at(9), "visitor_id": "b", "path": "/docsx"},
        {"event_id": "p4", "ts": at(9), "visitor_id": "b", "path": "/docs/x", "type": "request"},
        {"event_id": "p5", "ts": at(9), "visitor_id": "b", "path": "/docs/x", "is_bot": True},
        custom("c1", "signup", "a", {"plan": "pro"}),
        custom("c2", "signup", "b", {"plan": "free"}),
        custom("c3", "signup", "c", {"plan": "pro"}, site_id="t"),
        {"event_id": "t1", "ts": at(9), "visitor_id": "z", "path": "/", "site_id": "t"},
    )
    got = goal_breakdowns(humans(events, make_zones({}), changes), goals, [DAY, NEXT_DAY])
    got = got.where(F.col("dimension") == "goal").select(*events.sparkSession.createDataFrame([], GOAL_DDL).columns)

    def row(site: str, day: str, goal: str, visitors: int, count: int, name: str) -> tuple:
        return (site, day, "goal", goal, 0, visitors, count, name, None)

    expected = [
        row("s", DAY, "g1", 1, 2, "Docs"),
        row("s", DAY, "g2", 1, 1, "Pro signup"),
        row("s", DAY, "g3", 2, 2, "Any signup"),
        row("s", DAY, "g4", 0, 0, "Never"),
        row("t", DAY, "g5", 1, 1, "Home"),
        *[row("s", NEXT_DAY, g, 0, 0, n) for g, n in (("g1", "Docs"), ("g2", "Pro signup"), ("g3", "Any signup"))],
        row("s", NEXT_DAY, "g4", 0, 0, "Never"),
        row("t", NEXT_DAY, "g5", 0, 0, "Home"),
    ]
    assertDataFrameEqual(got, events.sparkSession.createDataFrame(expected, GOAL_DDL))


def test_engaged_time_is_capped_and_scroll_depth_is_the_maximum_per_page_view(make_events, make_zones, changes):
    """Engaged time per report capped (negative, missing or non-numeric: 0); scroll depth the
    greatest of a page view's reports; a report without pageview_id is a page view of its own."""
    events = make_events(
        report("r1", "/a", 5000, 20, "pv1"),
        report("r2", "/a", 7000, 60, "pv1"),
        report("r3", "/a", MAX_ENGAGED_MS + 1, 40, "pv2"),  # capped
        report("r4", "/a", -50, None, "pv3"),  # no depth: pv3 has none
        report("r5", "/a", None, 150),  # no pageview_id, depth clamped to 100, no time
        report("r6", "/b", "soon", 10, "pv4", referrer="https://t.co/x", ref_domain="t.co"),
        report("r7", "/b", 1000, None, "pv5", is_bot=True),
    )
    got = engagement_breakdowns(humans(events, make_zones({}), changes))
    expected = [
        ("s", DAY, "/a", 12000 + MAX_ENGAGED_MS, 5, 3, 60 + 40 + 100, "page"),
        ("s", DAY, "/b", 0, 1, 1, 10, "page"),
        ("s", DAY, "(direct)", 12000 + MAX_ENGAGED_MS, None, None, None, "ref"),
        ("s", DAY, "t.co", 0, None, None, None, "ref"),
    ]
    assertDataFrameEqual(got, events.sparkSession.createDataFrame(expected, ENGAGEMENT_DDL))


def test_a_page_with_engagement_and_no_page_view_gets_a_row(make_events, make_zones, changes):
    """with_engagement joins engaged time onto page and ref rows (0 without reports) and adds the
    page of a report whose page view fell on the day before, with 0 page views."""
    events = make_events(
        {"event_id": "p1", "ts": at(12), "visitor_id": "a", "path": "/a"},
        {"event_id": "p2", "ts": at(12), "visitor_id": "a", "path": "/c", "country": "DE"},
        report("r1", "/a", 4000, 50, "p1"),
        report("r2", "/late", 2000, 30, "p0"),
    )
    local = humans(events, make_zones({}), changes)
    pageviews = local.where(F.col("type") == "pageview")
    joined = with_engagement(breakdowns(pageviews, sessionize(pageviews)), engagement_breakdowns(local))
    got = joined.where(F.col("dimension").isin("page", "ref", "country")).select(
        "dimension", "value", "pageviews", "visitors", "engaged_ms", "engagements", "scroll_views", "scroll_sum"
    )
    expected = [
        ("page", "/a", 1, 1, 4000, 1, 1, 50),
        ("page", "/c", 1, 1, 0, 0, 0, 0),
        ("page", "/late", 0, 0, 2000, 1, 1, 30),
        ("ref", "(direct)", 2, 1, 6000, None, None, None),
        ("country", "DE", 1, 1, None, None, None, None),
    ]
    ddl = "dimension STRING, value STRING, pageviews BIGINT, visitors BIGINT, engaged_ms BIGINT, "
    ddl += "engagements BIGINT, scroll_views BIGINT, scroll_sum BIGINT"
    assertDataFrameEqual(got, events.sparkSession.createDataFrame(expected, ddl))


def test_rollup_counts_engagement_on_the_local_day_of_a_clock_change(make_events, make_zones, changes):
    """Berlin, 2025-10-26 (25 hours): a report at 22:30 UTC is that day's (23:30 local), one at
    23:30 UTC the next day's; duplicates and bots never count; goals come through rollup()."""
    fall_back = "2025-10-26"
    midnight = 1_761_436_800_000  # 2025-10-26 00:00 UTC
    late, next_day = midnight + 22 * HOUR + 30 * MINUTE, midnight + 23 * HOUR + 30 * MINUTE
    rows = [
        report("r1", "/a", 3000, 10, "p1", ts=late),
        report("r1", "/a", 3000, 10, "p1", ts=late, received_at=late + HOUR),  # duplicate
        report("r2", "/a", 5000, 90, "p1", ts=next_day),
        report("r3", "/a", 9000, 10, "p3", ts=late, is_bot=True),
        custom("c1", "signup", "v", ts=late),
    ]
    events = make_events(*rows)
    goals = {"s": [GoalSpec("g", "event", name="Signup", event="signup")]}
    rolled = rollup(events, make_zones({"s": "Europe/Berlin"}), [fall_back], changes, goals=goals)
    daily = rolled["daily"].select("day", "engaged_ms", "engagements", "custom_events", "bot_events")
    assertDataFrameEqual(
        daily,
        events.sparkSession.createDataFrame(
            [(fall_back, 3000, 1, 1, 1)],
            "day STRING, engaged_ms BIGINT, engagements BIGINT, custom_events BIGINT, bot_events BIGINT",
        ),
    )
    rows_of_day = rolled["breakdowns"].where(F.col("dimension").isin("page", "goal", "event"))
    got = rows_of_day.select("dimension", "value", "pageviews", "visitors", "events", "engaged_ms", "scroll_sum")
    expected = [
        ("page", "/a", 0, 0, None, 3000, 10),
        ("goal", "g", 0, 1, 1, None, None),
        ("event", "signup", 0, 1, 1, None, None),
    ]
    ddl = "dimension STRING, value STRING, pageviews BIGINT, visitors BIGINT, events BIGINT, engaged_ms BIGINT, "
    assertDataFrameEqual(got, events.sparkSession.createDataFrame(expected, ddl + "scroll_sum BIGINT"))


def test_an_engagement_report_alone_makes_no_visitor_nor_lowers_a_conversion_rate(make_events, make_zones, changes):
    """One visitor views a page and signs up; another's only event of the day is an engagement
    report (a tab hidden after midnight). The day has one visitor, who converted: a rate of
    1.0, not 0.5. The report's engaged time still counts, on the day it arrives."""
    rows = [
        {"event_id": "p", "type": "pageview", "ts": at(10), "visitor_id": "a", "path": "/"},
        custom("c", "signup", "a"),
        report("r", "/", 4000, visitor_id="late"),
    ]
    events = make_events(*rows)
    goals = {"s": [GoalSpec("g", "event", name="Signup", event="signup")]}
    rolled = rollup(events, make_zones({"s": "UTC"}), [DAY], changes, goals=goals)
    daily = rolled["daily"].select("visitors", "engaged_ms", "engagements").collect()
    assert [tuple(row) for row in daily] == [(1, 4000, 1)]
    hours = rolled["hourly"].where(F.col("visitors") > 0).select("visitors").collect()
    assert [row.visitors for row in hours] == [1]  # the 10:00 hour; the report's 12:00 has none
    goal = rolled["breakdowns"].where(F.col("dimension") == "goal").select("visitors").collect()
    assert [row.visitors for row in goal] == [1]
