"""Funnel steps of the nightly rollup on tiny hand-written frames, compared with exact expected frames.

Expected medians come from :func:`statistics.median` and histograms from :func:`bisect.bisect_right`
over the documented bounds, independently of the transform's own way of computing them."""

from __future__ import annotations

import bisect
import statistics
from collections.abc import Callable

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.testing import assertDataFrameEqual

from footfall.goals import FUNNEL_TIME_BOUNDS_MS, FunnelSpec, GoalSpec
from spark_jobs.funnels import FUNNEL_DDL, funnel_steps
from spark_jobs.transforms import dedupe, localize, rollup
from tests.spark.conftest import DAY, HOUR, MINUTE, T0

NEXT_DAY = "2025-11-25"
SECOND = 1000


def at(minutes: float) -> int:
    """Milliseconds since the epoch, ``minutes`` after 2025-11-24 10:00 UTC."""
    return T0 + 10 * HOUR + int(minutes * MINUTE)


def page(path: str) -> GoalSpec:
    return GoalSpec(goal_id=path, kind="page", path=path)


def funnel(*paths: str, window: int = 0, strict: bool = False, funnel_id: str = "f") -> FunnelSpec:
    return FunnelSpec(funnel_id, tuple(page(p) for p in paths), window_minutes=window, strict=strict)


def histogram(times: list[int]) -> list[int]:
    counts = [0] * (len(FUNNEL_TIME_BOUNDS_MS) + 1)
    for took in times:
        counts[bisect.bisect_right(FUNNEL_TIME_BOUNDS_MS, took)] += 1
    return counts


def steps(first: int, *later: list[int], funnel_id: str = "f", day: str = DAY, site: str = "s") -> list[tuple]:
    """Expected rows: ``first`` visitors at step 1, then per later step the times (ms) from the
    step before of the visitors reaching it (one each)."""
    rows = [(site, day, funnel_id, 1, first, None, histogram([]))]
    for number, times in enumerate(later, start=2):
        median = float(statistics.median(times)) if times else None
        rows.append((site, day, funnel_id, number, len(times), median, histogram(times)))
    return rows


@pytest.fixture(scope="module")
def run(
    spark: SparkSession, make_events: Callable[..., DataFrame], make_zones: Callable[..., DataFrame], changes
) -> Callable[..., DataFrame]:
    """``run(specs, *rows)``: funnel_steps of site "s" (UTC) over archive rows given as dicts."""

    def go(specs: FunnelSpec | list[FunnelSpec], *rows: dict[str, object], zone: str = "UTC") -> DataFrame:
        events = make_events(*({"event_id": f"e{n}", "visitor_id": "v"} | row for n, row in enumerate(rows)))
        local = localize(dedupe(events), make_zones({"s": zone}), changes)
        return funnel_steps(local, {"s": specs if isinstance(specs, list) else [specs]})

    return go


def expect(spark: SparkSession, rows: list[tuple]) -> DataFrame:
    return spark.createDataFrame(rows, FUNNEL_DDL)


def test_steps_in_order_with_their_times(spark, run):
    """Three pages in order: one visitor at each step, times from the step before."""
    got = run(
        funnel("/a", "/b", "/c"),
        {"ts": at(0), "path": "/a"},
        {"ts": at(1), "path": "/b"},
        {"ts": at(3), "path": "/c"},
    )
    assertDataFrameEqual(got, expect(spark, steps(1, [MINUTE], [2 * MINUTE])))


def test_steps_out_of_order_do_not_count(spark, run):
    """A step before step 1 does not count; the earliest later match does."""
    got = run(
        funnel("/a", "/b", "/c"),
        {"ts": at(0), "path": "/b"},
        {"ts": at(1), "path": "/a"},
        {"ts": at(2), "path": "/c"},
        {"ts": at(5), "path": "/b"},
        {"ts": at(8), "path": "/b"},
    )
    assertDataFrameEqual(got, expect(spark, steps(1, [4 * MINUTE], [])))


def test_other_events_between_steps_strict_and_not(spark, run):
    """Another page between two steps breaks a strict funnel only; engagement reports and requests
    never do."""
    rows = (
        {"ts": at(0), "path": "/a", "visitor_id": "other"},
        {"ts": at(1), "path": "/x", "visitor_id": "other"},
        {"ts": at(2), "path": "/b", "visitor_id": "other"},
        {"ts": at(0), "path": "/a", "visitor_id": "quiet"},
        {"ts": at(1), "path": "/a", "visitor_id": "quiet", "type": "engagement", "props": '{"engaged_ms": 5000}'},
        {"ts": at(2), "path": "/api", "visitor_id": "quiet", "type": "request"},
        {"ts": at(3), "path": "/b", "visitor_id": "quiet"},
    )
    loose, strict = funnel("/a", "/b"), funnel("/a", "/b", strict=True, funnel_id="strict")
    assertDataFrameEqual(
        run([loose, strict], *rows),
        expect(spark, steps(2, [2 * MINUTE, 3 * MINUTE]) + steps(2, [3 * MINUTE], funnel_id="strict")),
    )


def test_strict_attempt_stops_but_a_later_one_counts(spark, run):
    """Strict: an attempt broken by another event stops there; a later attempt may go further."""
    got = run(
        funnel("/a", "/b", "/c", strict=True),
        {"ts": at(0), "path": "/a"},
        {"ts": at(1), "path": "/b"},
        {"ts": at(2), "path": "/x"},
        {"ts": at(3), "path": "/a"},
        {"ts": at(5), "path": "/b"},
        {"ts": at(9), "path": "/c"},
    )
    assertDataFrameEqual(got, expect(spark, steps(1, [2 * MINUTE], [4 * MINUTE])))


def test_session_mode_follows_activity_window_mode_the_clock(spark, run):
    """Within a session, a step 45 minutes on counts while events keep the session alive, and one
    40 minutes on after silence does not; a 30-minute window is the other way round for the first
    and a 60-minute window counts the second."""
    kept_alive = (
        {"ts": at(0), "path": "/a", "visitor_id": "busy"},
        {"ts": at(20), "type": "video_play", "path": None, "visitor_id": "busy"},  # a custom event keeps it going
        {"ts": at(40), "path": "/x", "visitor_id": "busy"},
        {"ts": at(45), "path": "/b", "visitor_id": "busy"},
    )
    silent = ({"ts": at(0), "path": "/a", "visitor_id": "idle"}, {"ts": at(40), "path": "/b", "visitor_id": "idle"})
    specs = [funnel("/a", "/b"), funnel("/a", "/b", window=30, funnel_id="w30")]
    specs.append(funnel("/a", "/b", window=60, funnel_id="w60"))
    assertDataFrameEqual(
        run(specs, *kept_alive, *silent),
        expect(
            spark,
            steps(2, [45 * MINUTE])
            + steps(2, [], funnel_id="w30")
            + steps(2, [45 * MINUTE, 40 * MINUTE], funnel_id="w60"),
        ),
    )


def test_window_is_inclusive(spark, run):
    """A step exactly window_minutes after the first still counts; a millisecond later does not."""
    rows = (
        {"ts": at(0), "path": "/a", "visitor_id": "on"},
        {"ts": at(10), "path": "/b", "visitor_id": "on"},
        {"ts": at(0), "path": "/a", "visitor_id": "late"},
        {"ts": at(10) + 1, "path": "/b", "visitor_id": "late"},
    )
    assertDataFrameEqual(run(funnel("/a", "/b", window=10), *rows), expect(spark, steps(2, [10 * MINUTE])))


def test_best_attempt_is_furthest_then_earliest(spark, run):
    """Of a visitor's attempts the furthest counts, with its own times; between equals, the earliest."""
    further_later = (
        {"ts": at(0), "path": "/a", "visitor_id": "u"},
        {"ts": at(1), "path": "/b", "visitor_id": "u"},
        {"ts": at(120), "path": "/a", "visitor_id": "u"},
        {"ts": at(122), "path": "/b", "visitor_id": "u"},
        {"ts": at(125), "path": "/c", "visitor_id": "u"},
    )
    equal = (  # window 10: a@0 reaches b@5 (c@20 too late), a@30 reaches b@31: both step 2
        {"ts": at(0), "path": "/a", "visitor_id": "w"},
        {"ts": at(5), "path": "/b", "visitor_id": "w"},
        {"ts": at(20), "path": "/c", "visitor_id": "w"},
        {"ts": at(30), "path": "/a", "visitor_id": "w"},
        {"ts": at(31), "path": "/b", "visitor_id": "w"},
    )
    overtaking = (  # window 10: a@0 reaches b@9 but not c@15; a@8 reaches both
        {"ts": at(0), "path": "/a", "visitor_id": "x"},
        {"ts": at(8), "path": "/a", "visitor_id": "x"},
        {"ts": at(9), "path": "/b", "visitor_id": "x"},
        {"ts": at(15), "path": "/c", "visitor_id": "x"},
    )
    assertDataFrameEqual(
        run(funnel("/a", "/b", "/c", window=10), *further_later, *equal, *overtaking),
        expect(spark, steps(3, [2 * MINUTE, 5 * MINUTE, MINUTE], [3 * MINUTE, 6 * MINUTE])),
    )


def test_the_same_goal_twice_needs_two_events(spark, run):
    """A funnel /a -> /a is reached by a second /a page view, not by the first one again."""
    once = {"ts": at(0), "path": "/a", "visitor_id": "once"}
    twice = ({"ts": at(0), "path": "/a", "visitor_id": "twice"}, {"ts": at(0.5), "path": "/a", "visitor_id": "twice"})
    assertDataFrameEqual(run(funnel("/a", "/a"), once, *twice), expect(spark, steps(2, [30 * SECOND])))


def test_events_without_visitor_are_each_their_own_visitor(spark, run):
    """Events without visitor_id are unrelated: each /a is a visitor at step 1, no one goes on."""
    got = run(
        funnel("/a", "/b"),
        {"ts": at(0), "path": "/a", "visitor_id": None},
        {"ts": at(0), "path": "/a", "visitor_id": None},
        {"ts": at(1), "path": "/b", "visitor_id": None},
    )
    assertDataFrameEqual(got, expect(spark, steps(2, [])))


def test_bots_are_left_out(spark, run):
    """A bot's attempt counts nowhere; an unclassified (null) event counts as human."""
    got = run(
        funnel("/a", "/b"),
        {"ts": at(0), "path": "/a", "visitor_id": "bot", "is_bot": True},
        {"ts": at(1), "path": "/b", "visitor_id": "bot", "is_bot": True},
        {"ts": at(0), "path": "/a", "visitor_id": "h", "is_bot": None},
        {"ts": at(2), "path": "/b", "visitor_id": "h", "is_bot": None},
    )
    assertDataFrameEqual(got, expect(spark, steps(1, [2 * MINUTE])))


def test_an_attempt_belongs_to_the_day_it_starts(spark, run):
    """Berlin: an attempt from 23:50 finishing 00:10 the next day counts on its first day only;
    one started after midnight counts on the next day."""
    midnight = T0 + 23 * HOUR  # 2025-11-25 00:00 in Berlin (UTC+1)
    got = run(
        funnel("/a", "/b"),
        {"ts": midnight - 10 * MINUTE, "path": "/a", "visitor_id": "night"},
        {"ts": midnight + 10 * MINUTE, "path": "/b", "visitor_id": "night"},
        {"ts": midnight + 30 * MINUTE, "path": "/a", "visitor_id": "early"},
        zone="Europe/Berlin",
    )
    assertDataFrameEqual(got, expect(spark, steps(1, [20 * MINUTE]) + steps(1, [], day=NEXT_DAY)))


def test_eight_steps(spark, run):
    """All eight steps, each with its own time from the one before."""
    paths = [f"/{n}" for n in range(1, 9)]
    gaps = [1, 2, 3, 5, 8, 13, 21]  # minutes between consecutive steps, all within one session
    times = [0]
    for gap in gaps:
        times.append(times[-1] + gap)
    rows = [{"ts": at(t), "path": p} for t, p in zip(times, paths, strict=True)]
    expected = steps(1, *([gap * MINUTE] for gap in gaps))
    assertDataFrameEqual(run(funnel(*paths), *rows), expect(spark, expected))


def test_medians_and_histograms_over_visitors(spark, run):
    """An even count of visitors: the median is the mean of the middle two; times land in their buckets."""
    took = {"v1": 500, "v2": 90 * SECOND, "v3": 4 * MINUTE, "v4": 25 * MINUTE}
    rows = []
    for visitor, ms in took.items():
        rows += [
            {"ts": at(0), "path": "/a", "visitor_id": visitor},
            {"ts": at(0) + ms, "path": "/b", "visitor_id": visitor},
        ]
    got = run(funnel("/a", "/b"), *rows)
    assertDataFrameEqual(got, expect(spark, steps(4, list(took.values()))))
    assert got.where("step = 2").first()["median_ms"] == (90 * SECOND + 4 * MINUTE) / 2


def test_event_goals_with_properties(spark, run):
    """Custom-event steps, with a property compared as text (strings, numbers, booleans alike)."""
    signup = GoalSpec("g1", "event", event="signup", prop="plan", value="pro")
    paid = GoalSpec("g2", "event", event="paid", prop="seats", value="3")
    welcomed = GoalSpec("g3", "event", event="welcomed", prop="first", value="true")
    spec = FunnelSpec("f", (signup, paid, welcomed))
    got = run(
        spec,
        {"ts": at(0), "type": "signup", "path": None, "props": '{"plan": "free"}', "visitor_id": "free"},
        {"ts": at(0), "type": "signup", "path": None, "props": '{"plan": "pro"}', "visitor_id": "pro"},
        {"ts": at(1), "type": "paid", "path": None, "props": '{"seats": 2}', "visitor_id": "pro"},
        {"ts": at(2), "type": "paid", "path": None, "props": '{"seats": 3}', "visitor_id": "pro"},
        {"ts": at(4), "type": "welcomed", "path": None, "props": '{"first": true}', "visitor_id": "pro"},
    )
    assertDataFrameEqual(got, expect(spark, steps(1, [2 * MINUTE], [2 * MINUTE])))


def test_sites_have_their_own_funnels(spark, make_events, make_zones, changes):
    """A site's events answer only its own funnels; a site without funnels gives no rows."""
    events = make_events(
        *(
            {"event_id": f"{site}{n}", "site_id": site, "visitor_id": "v", "ts": at(n), "path": path}
            for site in ("s", "t", "u")
            for n, path in enumerate(("/a", "/b"))
        )
    )
    local = localize(events, make_zones({}), changes)
    got = funnel_steps(local, {"s": [funnel("/a", "/b")], "t": [funnel("/b", "/a", funnel_id="g")], "u": []})
    assertDataFrameEqual(got, expect(spark, steps(1, [MINUTE]) + steps(1, [], funnel_id="g", site="t")))


def test_no_funnels_give_an_empty_frame_with_the_columns(make_events, make_zones, changes):
    """Without any funnel the output is empty but typed."""
    local = localize(make_events({"event_id": "e", "ts": at(0)}), make_zones({}), changes)
    got = funnel_steps(local, {})
    assert got.schema.simpleString() == funnel_steps(local, {"s": [funnel("/a", "/b")]}).schema.simpleString()
    assert got.count() == 0


def test_duplicate_funnel_ids_are_refused(make_events):
    """Two funnels of one site with the same id would merge their counts: a clear error instead."""
    with pytest.raises(ValueError, match="funnel ids must be unique"):
        funnel_steps(make_events({"event_id": "e", "ts": at(0)}), {"s": [funnel("/a", "/b"), funnel("/b", "/a")]})


def test_rollup_keeps_the_days_asked(spark, make_events, make_zones, changes):
    """rollup's "funnels" holds the attempts starting on the days rolled up, seen whole across midnight."""
    events = make_events(
        {"event_id": "e1", "visitor_id": "v", "ts": T0 - 5 * MINUTE, "path": "/a"},  # the evening before
        {"event_id": "e2", "visitor_id": "v", "ts": T0 + 5 * MINUTE, "path": "/b"},
        {"event_id": "e3", "visitor_id": "w", "ts": T0 + 23 * HOUR + 55 * MINUTE, "path": "/a"},
        {"event_id": "e4", "visitor_id": "w", "ts": T0 + 24 * HOUR + 5 * MINUTE, "path": "/b"},
    )
    result = rollup(events, make_zones({}), [DAY], changes, funnels={"s": [funnel("/a", "/b")]})
    assertDataFrameEqual(result["funnels"], expect(spark, steps(1, [10 * MINUTE])))
