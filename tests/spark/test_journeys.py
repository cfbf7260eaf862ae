"""Journey sessions of the nightly rollup on one small frame, against sessions computed in plain Python
(tests/journey_truth.py): reloads, custom events as steps, requests, reports and bots left out, the
30-minute split, a session over midnight, and a long session cut where the docs say."""

from __future__ import annotations

from collections import Counter

from pyspark.sql import SparkSession
from pyspark.testing import assertDataFrameEqual

from footfall.journeys import kept_length
from spark_jobs.journeys import JOURNEY_DDL, journey_sessions
from spark_jobs.transforms import dedupe, localize
from tests.journey_truth import Hit, sessions
from tests.spark.conftest import DAY, HOUR, MINUTE, T0

NEXT_DAY = "2025-11-25"


def at(minutes: float) -> int:
    """Milliseconds since the epoch, ``minutes`` after 2025-11-24 10:00 UTC."""
    return T0 + 10 * HOUR + int(minutes * MINUTE)


HITS = [
    # v1: a reload, an event, then a gap of 37 minutes: two sessions.
    Hit("v1", at(0), "a1", "pageview", "/a"), Hit("v1", at(1), "a2", "pageview", "/a"),
    Hit("v1", at(2), "a3", "signup"), Hit("v1", at(3), "a4", "pageview", "/b"),
    Hit("v1", at(40), "a5", "pageview", "/c"),
    # v2: a request and an engagement report are no steps; the same journey again later (two sessions, one row).
    Hit("v2", at(0), "b1", "pageview", "/a"), Hit("v2", at(1), "b2", "request", "/api"),
    Hit("v2", at(2), "b3", "engagement", "/a"), Hit("v2", at(3), "b4", "pageview", "/b"),
    Hit("v2", at(100), "b5", "pageview", "/a"), Hit("v2", at(101), "b6", "pageview", "/b"),
    # Bots and events without a visitor are never steps.
    Hit("bot", at(0), "c1", "pageview", "/a", bot=True), Hit(None, at(0), "c2", "pageview", "/a"),
    # v3 from 23:50 to 00:05: the day it starts on. v4 on the next day.
    Hit("v3", at(13 * 60 + 50), "d1", "pageview", "/a"), Hit("v3", at(14 * 60 + 5), "d2", "buy"),
    Hit("v4", at(14 * 60 + 10), "e1", "pageview", "/z"),
    # v5: 30 steps between two pages: kept up to MAX_STEPS past the last new one.
    *[Hit("v5", at(200 + n / 10), f"f{n:02d}", "pageview", "/p" if n % 2 else "/q") for n in range(30)],
]  # fmt: skip


def test_sessions_with_their_kept_steps_per_visitor_and_day(spark: SparkSession, make_events, make_zones, changes):
    """Each day's rows equal the plain-Python sessions, numbered per day, with equal ones counted."""
    rows = [
        {"event_id": h.event_id, "visitor_id": h.visitor, "ts": h.ts, "type": h.type, "path": h.path, "is_bot": h.bot}
        for h in HITS
    ]
    local = localize(dedupe(make_events(*rows, rows[0])), make_zones({"s": "UTC"}), changes)  # a duplicate too
    got = journey_sessions(local, [DAY, NEXT_DAY])

    expected = []
    for day, found in sessions(HITS, "UTC").items():
        numbers = {v: n for n, v in enumerate(sorted({v for v, _ in found}), start=1)}
        kept = [(v, steps[: kept_length(steps)], kept_length(steps) < len(steps)) for v, steps in found]
        counted = Counter((v, tuple(s), cut) for v, s, cut in kept)
        expected += [("s", day, numbers[v], list(s), cut, n) for (v, s, cut), n in counted.items()]
    assert ("s", DAY, 4, ["/q", "/p"] * 11, True, 1) in expected  # v5: 2 + MAX_STEPS (20) steps kept
    assert ("s", DAY, 2, ["/a", "/b"], False, 2) in expected
    assert ("s", DAY, 1, ["/a", "signup", "/b"], False, 1) in expected
    assert ("s", DAY, 3, ["/a", "buy"], False, 1) in expected
    assertDataFrameEqual(got, spark.createDataFrame(expected, JOURNEY_DDL))
