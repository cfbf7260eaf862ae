"""The rollup's DataFrame transforms on tiny hand-written frames, compared with exact expected frames."""

from __future__ import annotations

import datetime as dt

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from spark_jobs.transforms import (
    breakdowns,
    daily_totals,
    dedupe,
    localize,
    only_bots,
    only_humans,
    rollup,
    sessionize,
)
from tests.spark.conftest import DAY, HOUR, MINUTE, T0

NEXT_DAY = "2025-11-25"
SESSION_DDL = (
    "site_id STRING, visitor_id STRING, session_id STRING, start_ts BIGINT, end_ts BIGINT, day STRING, "
    "bucket_start BIGINT, pageviews INT, duration_s DOUBLE, is_bounce BOOLEAN, entry_page STRING, "
    "entry_ref_domain STRING, entry_ref_type STRING, entry_utm_source STRING, entry_utm_medium STRING, "
    "entry_utm_campaign STRING, entry_country STRING, entry_browser STRING, entry_os STRING, entry_device STRING"
)
DAILY_DDL = (
    "site_id STRING, day STRING, pageviews BIGINT, visitors BIGINT, sessions BIGINT, bounces BIGINT, "
    "bounce_rate DOUBLE, visit_duration_s DOUBLE, events BIGINT, bot_events BIGINT, custom_events BIGINT, "
    "engaged_ms BIGINT, engagements BIGINT"
)
HOURLY_DDL = (
    "site_id STRING, day STRING, bucket_start BIGINT, pageviews BIGINT, visitors BIGINT, sessions BIGINT, "
    "events BIGINT, bot_events BIGINT"
)
BREAKDOWN_DDL = (
    "site_id STRING, day STRING, dimension STRING, value STRING, pageviews BIGINT, visitors BIGINT, "
    "sessions BIGINT, bounces BIGINT, visit_duration_s DOUBLE, ref STRING, page STRING"
)
# rollup()'s breakdowns: those of breakdowns() and the columns only some dimensions have.
ROLLUP_BREAKDOWN_DDL = (
    f"{BREAKDOWN_DDL}, engaged_ms BIGINT, engagements BIGINT, scroll_views BIGINT, scroll_sum BIGINT, "
    "events BIGINT, event STRING, prop STRING, prop_value STRING, name STRING, goal_id STRING, no_revenue BIGINT, "
    "currency STRING, revenue BIGINT"
)
NO_ENGAGEMENT, NO_EVENTS = (None,) * 4, (None,) * 9


def at(hours: float = 0, minutes: float = 0) -> int:
    """Milliseconds since the epoch, ``hours`` and ``minutes`` after 2025-11-24 00:00 UTC."""
    return T0 + int(hours * HOUR + minutes * MINUTE)


def human_pageviews(events: DataFrame, zones: DataFrame, changes: list[tuple[str, int]]) -> DataFrame:
    """What sessionize and breakdowns take: localized, deduplicated human page views."""
    return only_humans(localize(dedupe(events), zones, changes)).where(F.col("type") == "pageview")


def session(
    visitor: str | None,
    first: str,
    start: int,
    end: int,
    pageviews: int,
    page: str | None = "/",
    ref_domain: str = "(direct)",
    ref_type: str | None = None,
    source: str | None = None,
) -> tuple:
    """An expected session row of site "s" in UTC on DAY (no utm_medium, utm_campaign, country or
    user agent)."""
    hour = start - start % HOUR  # the UTC hour's start: in UTC every bucket is one
    duration = (end - start) / 1000
    sid = f"s|{visitor or ''}|{first}"
    entry = (page, ref_domain, ref_type, source, None, None, None, None, None, None)
    return ("s", visitor, sid, start, end, DAY, hour, pageviews, duration, pageviews == 1, *entry)


# --- dedupe ------------------------------------------------------------------------------------


def test_dedupe_keeps_earliest_received_copy(make_events):
    """Of several archived copies of one event, the one received first is kept, per site."""
    events = make_events(
        {"event_id": "e1", "ts": at(10), "received_at": at(10) + 5000, "kafka_partition": 0, "kafka_offset": 10},
        {"event_id": "e1", "ts": at(10), "received_at": at(10) + 1000, "kafka_partition": 3, "kafka_offset": 7},
        {"event_id": "e1", "ts": at(10), "received_at": at(10) + 9000, "kafka_partition": 1, "kafka_offset": 2},
        {"event_id": "e2", "ts": at(11), "kafka_partition": 0, "kafka_offset": 1},
        {"event_id": "e1", "site_id": "t", "ts": at(12), "kafka_partition": 2, "kafka_offset": 5},
    )
    got = dedupe(events)
    assert got.columns == events.columns
    assertDataFrameEqual(
        got.select("site_id", "event_id", "received_at", "kafka_partition", "kafka_offset"),
        events.sparkSession.createDataFrame(
            [("s", "e1", at(10) + 1000, 3, 7), ("s", "e2", at(11), 0, 1), ("t", "e1", at(12), 2, 5)],
            "site_id STRING, event_id STRING, received_at BIGINT, kafka_partition INT, kafka_offset BIGINT",
        ),
    )


def test_dedupe_counts_every_copy_of_the_event_it_keeps(make_events):
    """With ``copies``, the kept row says how many rows of the input the event had (the rows read)."""
    events = make_events(
        {"event_id": "e1", "ts": at(10), "kafka_partition": 0, "kafka_offset": 10},
        {"event_id": "e1", "ts": at(10), "kafka_partition": 3, "kafka_offset": 7},
        {"event_id": "e1", "ts": at(10), "kafka_partition": 1, "kafka_offset": 2},
        {"event_id": "e2", "ts": at(11), "kafka_partition": 0, "kafka_offset": 1},
        {"event_id": "e1", "site_id": "t", "ts": at(12), "kafka_partition": 2, "kafka_offset": 5},
    )
    got = dedupe(events, copies="n")
    assert got.columns == [*events.columns, "n"]
    assertDataFrameEqual(
        got.select("site_id", "event_id", "kafka_partition", "n"),
        events.sparkSession.createDataFrame(
            [("s", "e1", 0, 3), ("s", "e2", 0, 1), ("t", "e1", 2, 1)],
            "site_id STRING, event_id STRING, kafka_partition INT, n BIGINT",
        ),
    )


def test_dedupe_breaks_ties_by_partition_then_offset(make_events):
    """Copies received at the same moment: the lowest Kafka partition wins, then the lowest offset."""
    events = make_events(
        {"event_id": "e1", "ts": at(10), "kafka_partition": 2, "kafka_offset": 1},
        {"event_id": "e1", "ts": at(10), "kafka_partition": 1, "kafka_offset": 9},
        {"event_id": "e1", "ts": at(10), "kafka_partition": 1, "kafka_offset": 3},
    )
    got = dedupe(events).select("kafka_partition", "kafka_offset")
    assertDataFrameEqual(got, events.sparkSession.createDataFrame([(1, 3)], "kafka_partition INT, kafka_offset BIGINT"))


# --- localize -------------------------------------------------------------------------------------


def test_same_instant_is_a_different_day_per_time_zone(make_events, make_zones, changes):
    """23:30 UTC is the next day in Berlin, the afternoon in Los Angeles, and stays UTC without a tz row."""
    events = make_events(*({"event_id": "e1", "site_id": site, "ts": at(23, 30)} for site in ("berlin", "la", "none")))
    zones = make_zones({"berlin": "Europe/Berlin", "la": "America/Los_Angeles"})
    assertDataFrameEqual(
        localize(events, zones, changes).select("site_id", "day", "local_hour"),
        events.sparkSession.createDataFrame(
            [("berlin", NEXT_DAY, 0), ("la", DAY, 15), ("none", DAY, 23)], "site_id STRING, day STRING, local_hour INT"
        ),
    )


def test_localize_keeps_input_columns(make_events, make_zones, changes):
    """localize adds local_ts, day, local_hour and bucket_start after every input column."""
    events = make_events({"event_id": "e1", "ts": at(1)})
    got = localize(events, make_zones({"s": "Europe/Berlin"}), changes)
    assert got.columns == [*events.columns, "local_ts", "day", "local_hour", "bucket_start"]
    assert got.schema["local_ts"].dataType.simpleString() == "timestamp"


def test_localize_follows_daylight_saving(make_events, make_zones, changes):
    """Berlin moves from UTC+1 to UTC+2 at 01:00 UTC on 2025-03-30: local hour 2 never happens."""
    spring = int(dt.datetime(2025, 3, 30, tzinfo=dt.UTC).timestamp() * 1000)
    events = make_events(
        {"event_id": "before", "ts": spring + 30 * MINUTE}, {"event_id": "after", "ts": spring + 90 * MINUTE}
    )
    assertDataFrameEqual(
        localize(events, make_zones({"s": "Europe/Berlin"}), changes).select("event_id", "day", "local_hour"),
        events.sparkSession.createDataFrame(
            [("before", "2025-03-30", 1), ("after", "2025-03-30", 3)], "event_id STRING, day STRING, local_hour INT"
        ),
    )


def test_localize_refuses_a_zone_name_that_is_not_one(make_events, make_zones):
    """The offset changes reach Spark as SQL text: a name that could end its literal is refused."""
    with pytest.raises(ValueError, match="not a time zone name"):
        localize(make_events({"event_id": "e1", "ts": T0}), make_zones({}), [("UTC' OR 1=1 --", T0)])


def test_localize_does_not_depend_on_the_session_time_zone(spark: SparkSession, make_events, make_zones, changes):
    """day and local_hour are the same whatever spark.sql.session.timeZone the caller's session has."""
    events = make_events({"event_id": "e1", "site_id": "la", "ts": at(23, 30)})
    expected = spark.createDataFrame([(DAY, 15)], "day STRING, local_hour INT")
    spark.conf.set("spark.sql.session.timeZone", "Asia/Tokyo")
    try:
        got = localize(events, make_zones({"la": "America/Los_Angeles"}), changes).select("day", "local_hour")
        assertDataFrameEqual(got, expected)
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")


# --- humans and bots ------------------------------------------------------------------------------


def test_is_bot_null_counts_as_human(make_events):
    """only_humans keeps is_bot false and null; only_bots keeps is_bot true."""
    events = make_events(
        {"event_id": "h", "ts": at(1), "is_bot": False},
        {"event_id": "n", "ts": at(1), "is_bot": None},
        {"event_id": "b", "ts": at(1), "is_bot": True},
    )
    assert sorted(r.event_id for r in only_humans(events).collect()) == ["h", "n"]
    assert [r.event_id for r in only_bots(events).collect()] == ["b"]


def test_bots_are_excluded_from_human_metrics_but_counted(make_events, make_zones, changes):
    """Bot events count only in bot_events; a day with bot traffic alone still has a row of zeros."""
    events = make_events(
        {"event_id": "h1", "ts": at(10), "visitor_id": "a"},
        {"event_id": "h2", "ts": at(10, 5), "visitor_id": "a", "type": "signup"},
        {"event_id": "n1", "ts": at(11), "visitor_id": "c", "is_bot": None},
        {"event_id": "b1", "ts": at(12), "visitor_id": "bot", "is_bot": True},
        {"event_id": "b2", "ts": at(36), "visitor_id": "bot", "is_bot": True},
    )
    zones = make_zones({})
    local = localize(events, zones, changes)
    got = daily_totals(local, sessionize(human_pageviews(events, zones, changes)))
    assertDataFrameEqual(
        got,
        events.sparkSession.createDataFrame(
            [("s", DAY, 2, 2, 2, 2, 1.0, 0.0, 3, 1, 1, 0, 0), ("s", NEXT_DAY, 0, 0, 0, 0, 0.0, 0.0, 0, 1, 0, 0, 0)],
            DAILY_DDL,
        ),
    )


# --- sessions -------------------------------------------------------------------------------------


def test_gap_over_30_minutes_starts_a_new_session(make_events, make_zones, changes):
    """Page views 31 minutes apart are two sessions, each entered with its own page and referrer."""
    events = make_events(
        {"event_id": "p1", "ts": at(10), "visitor_id": "a", "path": "/a", "ref_domain": "google.com"}
        | {"ref_type": "search", "utm_source": "news"},
        {"event_id": "p2", "ts": at(10, 31), "visitor_id": "a", "path": "/b"},
    )
    got = sessionize(human_pageviews(events, make_zones({}), changes))
    expected = [
        session("a", "p1", at(10), at(10), 1, page="/a", ref_domain="google.com", ref_type="search", source="news"),
        session("a", "p2", at(10, 31), at(10, 31), 1, page="/b"),
    ]
    assertDataFrameEqual(got, events.sparkSession.createDataFrame(expected, SESSION_DDL))


def test_gaps_up_to_30_minutes_keep_the_session(make_events, make_zones, changes):
    """Gaps of exactly 30 and of 25 minutes continue one session, whatever order the rows come in."""
    events = make_events(
        {"event_id": "p3", "ts": at(10, 55), "visitor_id": "a", "path": "/c"},
        {"event_id": "p1", "ts": at(10), "visitor_id": "a", "path": "/a"},
        {"event_id": "p2", "ts": at(10, 30), "visitor_id": "a", "path": "/b"},
    )
    got = sessionize(human_pageviews(events, make_zones({}), changes))
    assertDataFrameEqual(
        got, events.sparkSession.createDataFrame([session("a", "p1", at(10), at(10, 55), 3, page="/a")], SESSION_DDL)
    )


def test_page_views_without_visitor_are_sessions_of_their_own(make_events, make_zones, changes):
    """Two visitor-less page views a minute apart are two bounces."""
    events = make_events(
        {"event_id": "n1", "ts": at(10), "visitor_id": None}, {"event_id": "n2", "ts": at(10, 1), "visitor_id": None}
    )
    got = sessionize(human_pageviews(events, make_zones({}), changes))
    expected = [session(None, "n1", at(10), at(10), 1), session(None, "n2", at(10, 1), at(10, 1), 1)]
    assertDataFrameEqual(got, events.sparkSession.createDataFrame(expected, SESSION_DDL))


def test_simultaneous_page_views_enter_by_lowest_event_id(make_events, make_zones, changes):
    """Two page views with the same ts: the lower event_id is the entry, so the session id is stable."""
    events = make_events(
        {"event_id": "p2", "ts": at(10), "visitor_id": "a", "path": "/two"},
        {"event_id": "p1", "ts": at(10), "visitor_id": "a", "path": "/one"},
    )
    got = sessionize(human_pageviews(events, make_zones({}), changes)).select("session_id", "entry_page", "pageviews")
    expected = events.sparkSession.createDataFrame(
        [("s|a|p1", "/one", 2)], "session_id STRING, entry_page STRING, pageviews INT"
    )
    assertDataFrameEqual(got, expected)


def test_session_crossing_midnight_belongs_to_its_start_day(make_events, make_zones, changes):
    """Berlin 23:50 → 00:10: one session on the first day, one page view on each day."""
    events = make_events(
        {"event_id": "m1", "ts": at(22, 50), "visitor_id": "a"},
        {"event_id": "m2", "ts": at(23, 10), "visitor_id": "a"},
    )
    zones = make_zones({"s": "Europe/Berlin"})
    both = rollup(events, zones, [DAY, NEXT_DAY], changes)
    expected = [
        ("s", DAY, 1, 1, 1, 0, 0.0, 1200.0, 1, 0, 0, 0, 0),
        ("s", NEXT_DAY, 1, 1, 0, 0, 0.0, 0.0, 1, 0, 0, 0, 0),
    ]
    assertDataFrameEqual(both["daily"], events.sparkSession.createDataFrame(expected, DAILY_DDL))
    # Rolled up alone, the second day still sees the session as started the evening before.
    assert rollup(events, zones, [NEXT_DAY], changes)["sessions"].count() == 0


def test_bounce_rate_and_visit_duration(make_events, make_zones, changes):
    """Sessions of 120 s, 0 s (a bounce) and 600 s: bounce rate 1/3, mean visit duration 240 s."""
    events = make_events(
        *({"event_id": f"a{m}", "ts": at(10, m), "visitor_id": "a"} for m in (0, 1, 2)),
        {"event_id": "b", "ts": at(11), "visitor_id": "b"},
        {"event_id": "c1", "ts": at(12), "visitor_id": "c"},
        {"event_id": "c2", "ts": at(12, 10), "visitor_id": "c"},
    )
    zones = make_zones({})
    got = daily_totals(localize(events, zones, changes), sessionize(human_pageviews(events, zones, changes)))
    assertDataFrameEqual(
        got.select("sessions", "bounces", "bounce_rate", "visit_duration_s"),
        events.sparkSession.createDataFrame(
            [(3, 1, 1 / 3, 240.0)], "sessions BIGINT, bounces BIGINT, bounce_rate DOUBLE, visit_duration_s DOUBLE"
        ),
    )


# --- breakdowns -----------------------------------------------------------------------------------


def test_entry_pages_come_from_sessions(spark: SparkSession, make_events, make_zones, changes):
    """entry_page sums the sessions' page views and counts sessions, bounces and mean duration per page."""
    sessions = spark.createDataFrame(
        [
            session("a", "1", at(10), at(10, 2), 3),
            session("b", "2", at(11), at(11), 1),
            session("a", "3", at(15), at(15, 1), 2, page="/pricing"),
            session(None, "4", at(16), at(16), 1, page=None),  # no path: no entry page row
        ],
        SESSION_DDL,
    )
    no_pageviews = human_pageviews(make_events(), make_zones({}), changes)
    got = breakdowns(no_pageviews, sessions).where(F.col("dimension") == "entry_page")
    expected = [
        ("s", DAY, "entry_page", "/", 4, 2, 2, 1, 60.0, None, None),
        ("s", DAY, "entry_page", "/pricing", 2, 1, 1, 0, 60.0, None, None),
    ]
    assertDataFrameEqual(got, spark.createDataFrame(expected, BREAKDOWN_DDL))


def test_refpage_pairs_referrer_with_landing_page(make_events, make_zones, changes):
    """refpage counts each (referrer domain, page) pair and exposes both halves as ref and page."""
    events = make_events(
        {"event_id": "p1", "ts": at(10), "visitor_id": "v1", "ref_domain": "google.com", "path": "/a"},
        {"event_id": "p2", "ts": at(10), "visitor_id": "v2", "ref_domain": "google.com", "path": "/a"},
        {"event_id": "p3", "ts": at(11), "visitor_id": "v1", "ref_domain": "google.com", "path": "/b"},
        {"event_id": "p4", "ts": at(12), "visitor_id": "v3", "path": "/a"},
    )
    pageviews = human_pageviews(events, make_zones({}), changes)
    got = breakdowns(pageviews, sessionize(pageviews)).where(F.col("dimension") == "refpage")
    expected = [
        ("s", DAY, "refpage", "google.com\u001f/a", 2, 2, None, None, None, "google.com", "/a"),
        ("s", DAY, "refpage", "google.com\u001f/b", 1, 1, None, None, None, "google.com", "/b"),
        ("s", DAY, "refpage", "(direct)\u001f/a", 1, 1, None, None, None, "(direct)", "/a"),
    ]
    assertDataFrameEqual(got, events.sparkSession.createDataFrame(expected, BREAKDOWN_DDL))


def test_breakdowns_leave_out_null_values(make_events, make_zones, changes):
    """Null country, browser, referrer and UTM make no rows; a missing ref_domain is '(direct)'."""
    events = make_events(
        {"event_id": "p1", "ts": at(10), "visitor_id": "v1", "country": "DE", "ua_browser": "Firefox"}
        | {"referrer": "https://news.ycombinator.com/item", "ref_domain": "news.ycombinator.com"},
        {"event_id": "p2", "ts": at(11), "visitor_id": "v2"},
    )
    pageviews = human_pageviews(events, make_zones({}), changes)
    dims = ["country", "browser", "refurl", "ref", "utm_source", "ref_type", "os", "device"]
    got = (
        breakdowns(pageviews, sessionize(pageviews))
        .where(F.col("dimension").isin(dims))
        .select("dimension", "value", "pageviews", "visitors", "sessions")
    )
    expected = [
        ("country", "DE", 1, 1, None),
        ("browser", "Firefox", 1, 1, None),
        ("refurl", "https://news.ycombinator.com/item", 1, 1, None),
        ("ref", "news.ycombinator.com", 1, 1, None),
        ("ref", "(direct)", 1, 1, None),
    ]
    assertDataFrameEqual(
        got,
        events.sparkSession.createDataFrame(
            expected, "dimension STRING, value STRING, pageviews BIGINT, visitors BIGINT, sessions BIGINT"
        ),
    )


# --- rollup end to end ----------------------------------------------------------------------------

# A Berlin site's 2025-11-24 (23:00 UTC the day before to 23:00 UTC): visitor a comes from
# Google at 10:00 local (archived twice), views /pricing and signs up; b comes from Hacker News
# at 14:00 and bounces; a crawler fetches / at 14:30; c's session began at 23:50 the evening
# before and reached into the day at 00:05.
ROLLUP_ROWS = [
    {"event_id": "e1", "ts": at(9), "visitor_id": "a", "ref_domain": "google.com", "ref_type": "search"}
    | {"referrer": "https://www.google.com/", "ua_browser": "Firefox"},
    {"event_id": "e1", "ts": at(9), "received_at": at(9) + 5000, "kafka_offset": 1, "visitor_id": "a"}
    | {
        "ref_domain": "google.com",
        "ref_type": "search",
        "referrer": "https://www.google.com/",
        "ua_browser": "Firefox",
    },
    {"event_id": "e2", "ts": at(9, 10), "visitor_id": "a", "path": "/pricing", "ua_browser": "Firefox"},
    {"event_id": "e3", "ts": at(9, 12), "visitor_id": "a", "type": "signup", "path": "/pricing"},
    {"event_id": "e4", "ts": at(13), "visitor_id": "b", "ref_domain": "news.ycombinator.com", "ref_type": "other"}
    | {"referrer": "https://news.ycombinator.com/"},
    {"event_id": "e5", "ts": at(13, 30), "visitor_id": "bot", "is_bot": True, "ua_browser": "Googlebot"},
    {"event_id": "e6", "ts": at(-1, -10), "visitor_id": "c"},
    {"event_id": "e7", "ts": at(-1, 5), "visitor_id": "c"},
]


@pytest.fixture(scope="module")
def rolled(make_events, make_zones, changes) -> dict[str, DataFrame]:
    return rollup(make_events(*ROLLUP_ROWS), make_zones({"s": "Europe/Berlin"}), [DAY], changes)


def test_rollup_daily(spark: SparkSession, rolled):
    """The day's totals: duplicate, bot and the previous evening's session start left out of human metrics."""
    expected = [("s", DAY, 4, 3, 2, 1, 0.5, 300.0, 5, 1, 1, 0, 0)]
    assertDataFrameEqual(rolled["daily"], spark.createDataFrame(expected, DAILY_DDL))


def test_rollup_hourly(spark: SparkSession, rolled):
    """Hours are Berlin hours named by their UTC start; the bot counts only in bot_events; c's page
    view counts without a session."""
    expected = [("s", DAY, at(-1), 1, 1, 0, 1, 0), ("s", DAY, at(9), 2, 1, 1, 3, 0), ("s", DAY, at(13), 1, 1, 1, 1, 1)]
    assertDataFrameEqual(rolled["hourly"], spark.createDataFrame(expected, HOURLY_DDL))


def test_rollup_sessions(spark: SparkSession, rolled):
    """Only sessions starting on the day, with Berlin start hours and their entry referrers."""
    no_utm = (None, None, None)
    firefox, no_browser = (None, "Firefox", None, None), (None,) * 4  # country, browser, os, device
    entry_a = ("/", "google.com", "search", *no_utm, *firefox)
    entry_b = ("/", "news.ycombinator.com", "other", *no_utm, *no_browser)
    berlin = [
        ("s", "a", "s|a|e1", at(9), at(9, 10), DAY, at(9), 2, 600.0, False, *entry_a),
        ("s", "b", "s|b|e4", at(13), at(13), DAY, at(13), 1, 0.0, True, *entry_b),
    ]
    assertDataFrameEqual(rolled["sessions"], spark.createDataFrame(berlin, SESSION_DDL))


def test_rollup_breakdowns(spark: SparkSession, rolled):
    """Every breakdown row of the day, with exact counts: pages and referrers with engaged time 0
    (no engagement reports), the custom event counted once by name."""

    def row(dimension: str, value: str, pageviews: int, visitors: int, ref: str | None = None, page: str | None = None):
        engagement = {"page": (0, 0, 0, 0), "ref": (0, None, None, None)}.get(dimension, (None,) * 4)
        return ("s", DAY, dimension, value, pageviews, visitors, None, None, None, ref, page, *engagement, *NO_EVENTS)

    expected = [
        row("page", "/", 3, 3),
        row("page", "/pricing", 1, 1),
        row("ref", "google.com", 1, 1),
        row("ref", "news.ycombinator.com", 1, 1),
        row("ref", "(direct)", 2, 2),
        row("refurl", "https://www.google.com/", 1, 1),
        row("refurl", "https://news.ycombinator.com/", 1, 1),
        row("refpage", "google.com\u001f/", 1, 1, "google.com", "/"),
        row("refpage", "news.ycombinator.com\u001f/", 1, 1, "news.ycombinator.com", "/"),
        row("refpage", "(direct)\u001f/pricing", 1, 1, "(direct)", "/pricing"),
        row("refpage", "(direct)\u001f/", 1, 1, "(direct)", "/"),
        row("ref_type", "search", 1, 1),
        row("ref_type", "other", 1, 1),
        row("browser", "Firefox", 2, 1),
        ("s", DAY, "entry_page", "/", 3, 2, 2, 1, 300.0, None, None, *NO_ENGAGEMENT, *NO_EVENTS),
        ("s", DAY, "event", "signup", 0, 1, None, None, None, None, None, *NO_ENGAGEMENT, 1, *(None,) * 8),
    ]
    assertDataFrameEqual(rolled["breakdowns"], spark.createDataFrame(expected, ROLLUP_BREAKDOWN_DDL))


def test_rollup_is_deterministic(make_events, make_zones, changes):
    """Two runs over the same rows, given in opposite orders, produce equal frames."""
    zones = make_zones({"s": "Europe/Berlin"})
    first = rollup(make_events(*ROLLUP_ROWS), zones, [DAY], changes)
    second = rollup(make_events(*reversed(ROLLUP_ROWS)), zones, [dt.date(2025, 11, 24)], changes)
    assert first.keys() == second.keys() == {"daily", "hourly", "breakdowns", "sessions", "funnels", "journeys"}
    for name in first:
        assertDataFrameEqual(first[name], second[name])


def test_referrer_labels_direct_unknown_and_apps(make_events, make_zones, changes):
    """(direct) only without a referrer; a referrer naming no host or app is (unknown); an app
    is its package id: in the referrer breakdown, in referrer -> page pairs and entry referrers."""
    events = make_events(
        {"event_id": "e1", "ts": at(1), "visitor_id": "a"},
        {"event_id": "e2", "ts": at(2), "visitor_id": "b", "referrer": "about:blank", "ref_type": "other"},
        {"event_id": "e3", "ts": at(3), "visitor_id": "c", "referrer": "android-app://com.example.chat/"}
        | {"ref_domain": "com.example.chat", "ref_type": "other"},
        {"event_id": "e4", "ts": at(4), "visitor_id": "d", "referrer": "android-app://com.google.android.gm/"}
        | {"ref_domain": "mail.google.com", "ref_type": "email"},
    )
    zones = make_zones({})
    pageviews = human_pageviews(events, zones, changes)
    sessions = sessionize(pageviews)
    got = breakdowns(pageviews, sessions).where(F.col("dimension").isin("ref", "refpage"))
    labels = ["(direct)", "(unknown)", "com.example.chat", "mail.google.com"]
    expected = [("ref", label, None) for label in labels] + [("refpage", f"{label}\u001f/", label) for label in labels]
    assertDataFrameEqual(
        got.select("dimension", "value", "ref"),
        events.sparkSession.createDataFrame(expected, "dimension STRING, value STRING, ref STRING"),
    )
    entry = sorted(r["entry_ref_domain"] for r in sessions.collect())
    assert entry == sorted(labels)
