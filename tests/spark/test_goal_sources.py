"""Where a goal's converting visitors came from (spark_jobs.conversions.goal_source_breakdowns)."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from footfall.goals import GoalSpec
from spark_jobs.conversions import GOAL_SOURCE_DDL, goal_source_breakdowns
from spark_jobs.transforms import rollup, sessionize
from tests.spark.conftest import DAY, HOUR, MINUTE, T0
from tests.spark.test_conversions import humans

NEXT_DAY = "2025-11-25"
SIGNUP = GoalSpec("g1", "event", name="Signup", event="signup")
THANKS = GoalSpec("g2", "page", name="Thanks", path="/thanks")
GOALS = {"s": [SIGNUP, THANKS]}
COLUMNS = ("site_id", "day", "dimension", "value", "pageviews", "visitors", "events", "goal_id")


def at(hours: float = 0, minutes: float = 0) -> int:
    return T0 + int(hours * HOUR + minutes * MINUTE)


def view(event_id: str, ts: int, visitor: str | None, path: str = "/", **extra: object) -> dict[str, object]:
    return {"event_id": event_id, "type": "pageview", "ts": ts, "visitor_id": visitor, "path": path} | extra


def signup(event_id: str, ts: int, visitor: str | None, **extra: object) -> dict[str, object]:
    return {"event_id": event_id, "type": "signup", "ts": ts, "visitor_id": visitor, "path": None} | extra


def sources(site: str, day: str, dim: str, goal: str, value: str, visitors: int, conversions: int) -> tuple:
    return (site, day, f"goal_src:{dim}", f"{goal}\x1f{value}", 0, visitors, conversions, goal)


def base(site: str, day: str, dim: str, value: str, visitors: int) -> tuple:
    return (site, day, f"goal_base:{dim}", value, 0, visitors, None, None)


def goal_rows(frame: DataFrame, *dims: str) -> DataFrame:
    wanted = [f"{prefix}{d}" for prefix in ("goal_src:", "goal_base:") for d in dims]
    return frame.where(F.col("dimension").isin(*wanted)).select(*COLUMNS)


# Site "s" in UTC. a enters from Google, comes back directly two hours later and converts twice
# on signup and once on /thanks in that second session; b signs up before any page view and then
# enters from Twitter; c enters from Google and does not convert; a crawler enters from Google
# and signs up; d signs up without any page view that day; a visitor-less sign-up; site t has
# no goals. The second day: a enters directly and converts.
ROWS = [
    view("a1", at(10), "a", "/landing", ref_domain="google.com", ref_type="search"),
    view("a2", at(12), "a", "/pricing"),
    signup("a3", at(12, 5), "a"),
    signup("a3", at(12, 5), "a", received_at=at(12, 6), kafka_offset=1),  # an archived duplicate
    view("a4", at(12, 6), "a", "/thanks"),
    signup("a5", at(12, 10), "a"),
    signup("b1", at(8), "b"),
    view("b2", at(9), "b", "/blog", ref_domain="twitter.com", ref_type="social"),
    view("c1", at(11), "c", "/", ref_domain="google.com", ref_type="search"),
    view("x1", at(11), "bot", "/", ref_domain="google.com", is_bot=True),
    signup("x2", at(11, 1), "bot", is_bot=True),
    signup("d1", at(14), "d"),
    signup("n1", at(15), None),
    view("t1", at(10), "a", "/", site_id="t", ref_domain="google.com"),
    signup("t2", at(10, 1), "a", site_id="t"),
    view("a6", at(34), "a", "/thanks"),
]


def test_converting_visitors_count_under_their_first_session_of_the_day(spark: SparkSession, make_events, make_zones,
                                                                        changes):  # fmt: skip
    """Through rollup(): a visitor-day's conversions, a second session's and one before the first page
    view included, count under the first session's referrer; bots, visitors without a session that
    day, visitor-less events and sites without goals add nothing; each day attributes its own."""
    rolled = rollup(make_events(*ROWS), make_zones({}), [DAY, NEXT_DAY], changes, goals=GOALS)
    expected = [
        sources("s", DAY, "ref", "g1", "google.com", 1, 2),
        sources("s", DAY, "ref", "g2", "google.com", 1, 1),
        sources("s", DAY, "ref", "g1", "twitter.com", 1, 1),
        base("s", DAY, "ref", "google.com", 2),
        base("s", DAY, "ref", "twitter.com", 1),
        sources("s", NEXT_DAY, "ref", "g2", "(direct)", 1, 1),
        base("s", NEXT_DAY, "ref", "(direct)", 1),
    ]
    assertDataFrameEqual(goal_rows(rolled["breakdowns"], "ref"), spark.createDataFrame(expected, GOAL_SOURCE_DDL))


def test_every_dimension_takes_the_first_page_view_of_the_first_session(spark: SparkSession, make_events, make_zones,
                                                                        changes):  # fmt: skip
    """All ten dimensions come from the first session's first page view; a null value attributes
    the visitor to nothing in that dimension; equal start times go to the lowest session id."""
    first = {"ref_domain": "news.example", "ref_type": "other", "utm_source": "letter", "utm_campaign": "fall"}
    first |= {"country": "DE", "ua_browser": "Firefox", "ua_os": "Linux", "ua_device": "desktop"}
    later = {"ref_domain": "google.com", "ref_type": "search", "utm_source": "ads", "utm_medium": "cpc"}
    later |= {"country": "FR", "ua_browser": "Chrome", "ua_os": "Windows", "ua_device": "mobile"}
    events = make_events(
        view("e2", at(10), "a", "/second", **later),  # same ts, higher event id: not the entry
        view("e1", at(10), "a", "/first", **first),
        view("e3", at(11), "a", "/again", **later),  # a session of its own, 60 minutes later
        signup("e4", at(11, 1), "a"),
    )
    local = humans(events, make_zones({}), changes)
    sessions = sessionize(local.where(F.col("type") == "pageview"))
    got = goal_source_breakdowns(local, sessions, {"s": [SIGNUP]})
    values = {"ref": "news.example", "ref_type": "other", "utm_source": "letter", "utm_campaign": "fall"}
    values |= {"entry_page": "/first", "country": "DE", "browser": "Firefox", "os": "Linux", "device": "desktop"}
    expected = [sources("s", DAY, dim, "g1", value, 1, 1) for dim, value in values.items()]
    expected += [base("s", DAY, dim, value, 1) for dim, value in values.items()]
    assertDataFrameEqual(got.select(*COLUMNS), spark.createDataFrame(expected, GOAL_SOURCE_DDL))


def test_no_goals_no_rows(spark: SparkSession, make_events, make_zones, changes):
    """Without goals nothing is attributed, not even the base visitors."""
    local = humans(make_events(*ROWS), make_zones({}), changes)
    sessions = sessionize(local.where(F.col("type") == "pageview"))
    assert goal_source_breakdowns(local, sessions, {}).count() == 0
    assert goal_source_breakdowns(local, sessions, {"s": []}).count() == 0
