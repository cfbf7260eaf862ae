"""The merge of custom events, referrer→page pairs, goal sources, ``(other)`` and the live view,
over in-memory stores: every answer against the events themselves.

The site, clock and layers of :mod:`tests.unit.query.test_merge` (the 24th and 25th settled, the
26th and 27th recent, now 27 October 10:20 in Europe/Berlin), with more traffic: a custom event
every 30 minutes, half of them by visitors who view no page, and a few visitors whose days show
how goal sources attribute conversions. The ``(other)`` tests add one busy recent minute and a
speed layer that keeps only :data:`CAP` values per minute and dimension.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from footfall.goals import GoalSpec, prop_text
from footfall.vocabulary import MINUTE_VALUES, VALUE_OTHER
from query import conversions as conversions_module
from query import service as service_module
from query.conversions import Conversions
from query.service import OTHER_PAIRS_NOTE, QueryService
from tests.unit.query.memory_stores import Hit, MemoryCounters, MemoryRollups
from tests.unit.query.test_merge import (
    HITS,
    NOW,
    PRO,
    RETENTION_S,
    SETTLED,
    SIGNUP,
    SITE_INFO,
    TZ,
    WINDOW,
    counted,
    daily_visitors,
    days,
    local,
)

PLANS = ("free", "pro", "team")
FILES = ("a.pdf", "b.pdf", None)  # None: a JSON null, whose text is ""
RECENT = local(26)  # the first recent day's start
CAP = 2  # values per minute and dimension of the (other) tests' speed layer
BURST_AT = dt.datetime(2026, 10, 26, 12, 7, tzinfo=TZ)  # a recent minute off every other hit's


def at(day: int, hour: int, minute: int) -> dt.datetime:
    return dt.datetime(2026, 10, day, hour, minute, tzinfo=TZ)


def custom_events() -> list[Hit]:
    """A custom event every 30 minutes of UTC time from the 23rd on, off the page views' grid: in
    turn a sign-up (plan; seats, a number; from the 26th a coupon), a download (file, sometimes
    null) and a ping (no properties); every other one by a visitor who views no page."""
    hits = []
    moment = local(23).astimezone(dt.UTC) + dt.timedelta(minutes=5)
    n = 0
    while moment < NOW:
        visitor = f"w{n % 5}" if n % 2 else f"v{n % 7}"
        if n % 3 == 0:
            props: dict[str, object] = {"plan": PLANS[n // 3 % 3], "seats": n // 9 % 4 + 1}
            if moment >= RECENT:
                props["coupon"] = "autumn"
            hits.append(Hit(moment, "/app", visitor=visitor, type="signup", props=props))
        elif n % 3 == 1:
            hits.append(Hit(moment, "/app", visitor=visitor, type="download", props={"file": FILES[n // 3 % 3]}))
        else:
            hits.append(Hit(moment, "/app", visitor=visitor, type="ping"))
        moment += dt.timedelta(minutes=30)
        n += 1
    return hits


def visitor_days() -> list[Hit]:
    """Visitors whose days test goal sources. ``a`` lands from google.com on the 24th and signs up
    twice, the second time in a later session from news.ycombinator.com; ``b``'s session begun
    at 23:51 on the 24th signs up after midnight, and a new one starts on the 25th; ``c`` buys on
    the 25th without viewing a page that day; ``d`` buys on the 25th, then lands from google.com."""
    return [
        Hit(at(24, 9, 1), "/blog/a", "google.com", "a"),
        Hit(at(24, 9, 11), "/pricing", visitor="a"),
        Hit(at(24, 9, 16), "/signup", visitor="a"),
        Hit(at(24, 15, 1), "/signup", "news.ycombinator.com", "a"),
        Hit(at(24, 23, 51), "/", "news.ycombinator.com", "b"),
        Hit(at(25, 0, 11), "/signup", visitor="b"),
        Hit(at(25, 8, 1), "/pricing", visitor="b"),
        Hit(at(25, 12, 1), "/checkout", visitor="c", type="purchase", props={"plan": "pro"}),
        Hit(at(25, 7, 1), "/checkout", visitor="d", type="purchase", props={"plan": "pro"}),
        Hit(at(25, 7, 31), "/", "google.com", "d"),
    ]


def burst() -> list[Hit]:
    """One recent minute with more than :data:`CAP` values in each dimension: pages ``/a`` to
    ``/d`` from google.com, four custom event names, and purchases of three plans."""
    pages = ["/a"] * 3 + ["/b"] * 2 + ["/c", "/d"]
    names = ["share"] * 3 + ["like"] * 2 + ["save", "print"]
    plans = ["gold"] * 3 + ["silver"] * 2 + ["bronze"]
    second = dt.timedelta(seconds=1)
    return [
        *(Hit(BURST_AT + i * second, path, "google.com", f"x{i}") for i, path in enumerate(pages)),
        *(Hit(BURST_AT + i * second, "/app", visitor=f"y{i}", type=name) for i, name in enumerate(names)),
        *(Hit(BURST_AT + i * second, "/checkout", visitor=f"z{i}", type="purchase", props={"plan": plan})
          for i, plan in enumerate(plans)),
    ]  # fmt: skip


ALL = HITS + custom_events() + visitor_days()
BURST = burst()


def service(
    hits: list[Hit] = ALL, cap: int = MINUTE_VALUES, goals: Iterable[GoalSpec] = (SIGNUP, PRO), **rollups: Any
) -> QueryService:
    """The merge over ``hits``; ``rollups``: :class:`MemoryRollups`' options (goal_ids, ...)."""
    settled = MemoryRollups(TZ.key, hits, SETTLED, goals=list(goals), **rollups)
    return QueryService(settled, MemoryCounters(hits, WINDOW, cap), RETENTION_S, now=lambda: NOW)


def within(hits: Iterable[Hit], start: dt.datetime, end: dt.datetime) -> list[Hit]:
    """The hits of ``[start, end)`` the merge can count (settled, or recent enough)."""
    return [h for h in hits if start <= h.at < end and counted(h)]


def day_of(hit: Hit) -> str:
    return hit.at.astimezone(TZ).date().isoformat()


def grouped(hits: Iterable[Hit], key: Callable[[Hit], str]) -> dict[str, list[Hit]]:
    out: dict[str, list[Hit]] = defaultdict(list)
    for h in hits:
        out[key(h)].append(h)
    return out


def rows(answer: dict, *metrics: str) -> dict[str, tuple]:
    """An answer's rows as value -> its ``metrics``."""
    return {row["value"]: tuple(row[m] for m in metrics) for row in answer["results"]}


def sums(by_value: dict[str, list[Hit]]) -> dict[str, tuple[int, int]]:
    """Per value: its hits, and their visitors as the merge counts them over days."""
    return {value: (len(hits), daily_visitors(hits)) for value, hits in by_value.items()}


def assert_ranked(answer: dict, *metrics: str) -> None:
    """The rows come most of ``metrics`` first, ties by value."""
    keys = [(*(-row[m] for m in metrics), row["value"]) for row in answer["results"]]
    assert keys == sorted(keys)


# -- custom events ---------------------------------------------------------------------------


def test_custom_events_add_the_recent_part_to_the_settled_one() -> None:
    answer = service().breakdown(SITE_INFO, "event", days(24, 27), limit=10, page=1, metrics=("events", "visitors"))
    events = [h for h in within(ALL, local(24), local(28)) if h.custom]
    assert {day_of(h) for h in events} == {"2026-10-24", "2026-10-25", "2026-10-26", "2026-10-27"}
    by_name = grouped(events, lambda h: h.type)
    assert rows(answer, "events", "visitors") == sums(by_name)
    assert answer["total"] == len(by_name)
    assert_ranked(answer, "events")


@pytest.mark.parametrize(
    ("event", "prop"), [("signup", "plan"), ("signup", "seats"), ("download", "file"), ("purchase", "plan")]
)
def test_event_property_values_add_the_recent_part_to_the_settled_one(event: str, prop: str) -> None:
    answer = Conversions(service()).event_properties(SITE_INFO, event, prop, days(24, 27), limit=10, page=1)
    carrying = [h for h in within(ALL, local(24), local(28)) if h.type == event and prop in h.props]
    # Values as text, the same in both layers: seats 3 is "3", a null file "".
    by_text = grouped(carrying, lambda h: prop_text(h.props[prop]))
    assert rows(answer, "events", "visitors") == sums(by_text)
    assert answer["total"] == len(by_text)
    assert_ranked(answer, "events")
    assert not any("past the speed layer's cap" in note for note in answer["sources"]["notes"])


def test_event_property_names_come_from_the_settled_days_only() -> None:
    answer = Conversions(service()).event_property_names(SITE_INFO, "signup", days(24, 27))
    settled = [h for h in within(ALL, local(24), RECENT) if h.type == "signup"]
    names = Counter(name for h in settled for name in h.props)
    assert [(row["prop"], row["events"]) for row in answer["results"]] == sorted(
        names.items(), key=lambda kv: (-kv[1], kv[0])
    )
    assert any("coupon" in h.props for h in within(ALL, RECENT, local(28)))  # recent only: not listed yet
    notes = answer["sources"]["notes"]
    assert "property names come from the settled days only; recent days add theirs once rolled up" in notes


# -- referrer -> page pairs --------------------------------------------------------------------


@pytest.mark.parametrize(("side", "value"), [("ref", "google.com"), ("path", "/pricing")])
def test_referrer_page_pairs_add_the_recent_part_to_the_settled_one(side: str, value: str) -> None:
    """A referrer's pages (``ref``), a page's referrers (``path``)."""
    answer = service().breakdown(
        SITE_INFO, "refpage", days(24, 27), limit=10, page=1, metrics=("pageviews", "visitors"), **{side: value}
    )
    views = [h for h in within(ALL, local(24), local(28)) if h.type == "pageview"]
    if side == "ref":
        by_other_side = grouped((h for h in views if h.ref == value), lambda h: h.path)
    else:
        by_other_side = grouped((h for h in views if h.path == value), lambda h: h.ref)
    assert rows(answer, "pageviews", "visitors") == sums(by_other_side)
    assert answer["total"] == len(by_other_side)
    assert_ranked(answer, "pageviews")
    assert OTHER_PAIRS_NOTE not in answer["sources"]["notes"]


# -- goal sources ----------------------------------------------------------------------------


def first_sessions(hits: Iterable[Hit], day: str) -> dict[str, Hit]:
    """Each visitor's first session starting on ``day``, by its first page view: a visitor's
    page view more than 30 minutes after their previous one (of any day), or their first,
    starts a session."""
    first: dict[str, Hit] = {}
    previous: dict[str, dt.datetime] = {}
    for h in sorted((h for h in hits if h.type == "pageview"), key=lambda h: h.at):
        starts = h.visitor not in previous or h.at - previous[h.visitor] > dt.timedelta(minutes=30)
        previous[h.visitor] = h.at
        if starts and day_of(h) == day:
            first.setdefault(h.visitor, h)
    return first


def goal_sources(goal: GoalSpec, dim: str, on: Iterable[str]) -> tuple[dict[str, tuple[int, int]], Counter[str]]:
    """Over the days ``on``: per value of ``dim`` (``ref`` or ``entry_page``) of the visitors'
    first sessions, (converting visitors, their conversions that day), and all visitors there."""
    found: dict[str, tuple[int, int]] = {}
    base: Counter[str] = Counter()
    for day in on:
        source = {v: h.ref if dim == "ref" else h.path for v, h in first_sessions(ALL, day).items()}
        base.update(source.values())
        conversions = Counter(h.visitor for h in ALL if day_of(h) == day and goal.matches(h.type, h.path, h.props))
        for visitor, n in conversions.items():
            if visitor in source:  # else no session started that day: attributed to nothing
                visitors, before = found.get(source[visitor], (0, 0))
                found[source[visitor]] = (visitors + 1, before + n)
    return found, base


@pytest.mark.parametrize("dim", ["ref", "entry_page"])
@pytest.mark.parametrize("goal", [SIGNUP, PRO], ids=["page goal", "event goal"])
def test_goal_sources_attribute_visitor_days_to_their_first_session_on_settled_days_only(
    goal: GoalSpec, dim: str
) -> None:
    answer = Conversions(service()).goal_breakdown(SITE_INFO, dim, goal, days(24, 27), limit=100, page=1)
    expected, base = goal_sources(goal, dim, sorted(SETTLED))
    assert rows(answer, "visitors", "conversions") == expected
    assert answer["total"] == len(expected)
    for row in answer["results"]:
        assert row["conversion_rate"] == round(row["visitors"] / base[row["value"]], 6)
    assert_ranked(answer, "visitors", "conversions")
    # The recent days are missing, never estimated from the speed layer's counters.
    sources = answer["sources"]
    assert sources["realtime"]["buckets"] == 0
    missing = sources["missing"]
    assert (dt.datetime.fromisoformat(missing["from"]), dt.datetime.fromisoformat(missing["to"])) == (RECENT, local(28))
    assert any("goal-filtered breakdowns are counted by the nightly rollup only" in n for n in sources["notes"])


@pytest.mark.parametrize(
    "rolled_up",
    [{"goal_ids": {"2026-10-24": {"2"}}}, {"attributed": {"2026-10-25"}}],
    ids=["before the goal", "before attribution"],
)
def test_a_settled_day_without_the_goals_sources_counts_nothing_and_is_named(rolled_up: dict) -> None:
    answer = Conversions(service(**rolled_up)).goal_breakdown(SITE_INFO, "ref", SIGNUP, days(24, 27), 100, 1)
    expected, base = goal_sources(SIGNUP, "ref", ["2026-10-25"])
    assert rows(answer, "visitors", "conversions") == expected
    for row in answer["results"]:  # the rate's visitors come from the same days
        assert row["conversion_rate"] == round(row["visitors"] / base[row["value"]], 6)
    notes = answer["sources"]["notes"]
    assert any("goal 1 (Sign-up): 1 settled day(s) from 2026-10-24 to 2026-10-24 were rolled up" in n for n in notes)


# -- (other) ---------------------------------------------------------------------------------


def stored(dim: str, hits: Iterable[Hit]) -> list[tuple[str, Hit]]:
    """Each unit of ``hits`` in ``dim`` with the value the speed layer keeps it under: the burst's
    minute holds its CAP busiest values and counts the rest as (other); no other minute of
    HITS + BURST has more than CAP values in a dimension."""
    busiest = {value for value, _ in Counter(v for h in BURST for v in h.values(dim)).most_common(CAP)}
    return [(v if h not in BURST or v in busiest else VALUE_OTHER, h) for h in hits for v in h.values(dim)]


@pytest.mark.parametrize(("dim", "metric"), [("page", "pageviews"), ("event", "events")])
def test_values_past_a_minutes_cap_are_one_other_row_and_the_rows_add_up(dim: str, metric: str) -> None:
    hits = HITS + BURST
    answer = service(hits, CAP).breakdown(SITE_INFO, dim, days(24, 27), limit=100, page=1, metrics=(metric, "visitors"))
    by_value: dict[str, list[Hit]] = defaultdict(list)
    for value, h in stored(dim, within(hits, local(24), local(28))):
        by_value[value].append(h)
    assert VALUE_OTHER in by_value
    assert rows(answer, metric, "visitors") == sums(by_value)


def test_a_referrers_pairs_past_a_minutes_cap_are_one_other_row_with_the_settled_visitors_only() -> None:
    hits = HITS + BURST
    answer = service(hits, CAP).breakdown(
        SITE_INFO, "refpage", days(24, 27), limit=100, page=1, metrics=("pageviews", "visitors"), ref="google.com"
    )
    views = [(value, h) for value, h in stored("refpage", within(hits, local(24), local(28))) if h.ref == "google.com"]
    by_page = grouped((h for value, h in views if value != VALUE_OTHER), lambda h: h.path)
    past_cap = [h for value, h in views if value == VALUE_OTHER]
    assert past_cap
    # The speed layer cannot tell those page views' visitors apart by referrer; none is settled.
    assert rows(answer, "pageviews", "visitors") == {**sums(by_page), VALUE_OTHER: (len(past_cap), 0)}
    assert OTHER_PAIRS_NOTE in answer["sources"]["notes"]


@pytest.mark.parametrize(("dim", "metric"), [("page", "pageviews"), ("ref", "pageviews"), ("event", "events")])
def test_a_realtime_part_cut_to_its_top_values_counts_the_rest_under_other(
    monkeypatch: pytest.MonkeyPatch, dim: str, metric: str
) -> None:
    monkeypatch.setattr(service_module, "REALTIME_TOP", 2)  # each realtime piece: its busiest value and (other)
    answer = service().breakdown(SITE_INFO, dim, days(24, 27), limit=100, page=1, metrics=(metric,))
    expected: Counter[str] = Counter()
    for day in range(24, 28):
        counts = Counter(v for h in within(ALL, local(day), local(day + 1)) for v in h.values(dim))
        if local(day).date().isoformat() in SETTLED:
            expected.update(counts)
            continue
        top, n = min(counts.items(), key=lambda kv: (-kv[1], kv[0]))  # the realtime piece is the day
        expected[top] += n
        if rest := counts.total() - n:
            expected[VALUE_OTHER] += rest
    assert {row["value"]: row[metric] for row in answer["results"]} == expected


def test_event_property_values_past_the_caps_are_other_when_settled_and_unattributed_when_recent() -> None:
    hits = HITS + BURST
    answer = Conversions(service(hits, CAP, prop_values=1)).event_properties(
        SITE_INFO, "purchase", "plan", days(24, 27), limit=100, page=1
    )
    expected: dict[str, list[Hit]] = defaultdict(list)
    for day in (24, 25):  # each settled day keeps its plan with most purchases; the rest is (other)
        purchases = [h for h in within(hits, local(day), local(day + 1)) if h.type == "purchase"]
        texts = Counter(prop_text(h.props["plan"]) for h in purchases)
        kept = min(texts, key=lambda text: (-texts[text], text))
        for h in purchases:
            expected[kept if prop_text(h.props["plan"]) == kept else VALUE_OTHER].append(h)
    recent = [(v, h) for v, h in stored("event_prop", within(hits, RECENT, local(28))) if h.type == "purchase"]
    for value, h in recent:
        if value != VALUE_OTHER:  # past a minute's cap a value belongs to no event: in no row
            expected[prop_text(h.props["plan"])].append(h)
    unattributed = sum(value == VALUE_OTHER for value, _ in recent)
    assert unattributed
    assert rows(answer, "events", "visitors") == sums(expected)
    note = f"realtime part: {unattributed:,} property values of custom events came past the speed layer's cap"
    assert any(n.startswith(note) for n in answer["sources"]["notes"])


def test_event_property_values_past_the_realtime_top_are_counted_under_other(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(conversions_module, "REALTIME_TOP", 2)  # as a day with more than 1000 values would be cut
    answer = Conversions(service()).event_properties(SITE_INFO, "signup", "plan", days(26, 27), limit=100, page=1)
    signups = [h for h in within(ALL, RECENT, local(28)) if h.type == "signup"]
    assert sum(row["events"] for row in answer["results"]) == len(signups)


# -- the live view ---------------------------------------------------------------------------


def test_the_live_view_reads_the_last_minutes_of_the_speed_layer() -> None:
    launch = [Hit(NOW - dt.timedelta(minutes=m, seconds=30), "/launch", "twitter.com", f"l{m}") for m in range(1, 9)]
    ping = Hit(NOW - dt.timedelta(minutes=1), "/app", visitor="q", type="ping")  # a visitor who views no page
    hits = [*ALL, *launch, ping]
    limit = 2  # fewer than the window's pages, referrers and pairs
    live = service(hits).realtime(SITE_INFO, 60, limit=limit)
    end = NOW.replace(second=0, microsecond=0) + dt.timedelta(minutes=1)  # the current minute included
    start = end - dt.timedelta(minutes=60)
    recent = [h for h in hits if start <= h.at < end]
    views = [h for h in recent if h.type == "pageview"]
    assert (live["pageviews"], live["visitors"]) == (len(views), len({h.visitor for h in recent}))
    assert live["concurrent_visitors"] == len({h.visitor for h in hits if h.at >= NOW - dt.timedelta(minutes=5)})
    minutes = [start + dt.timedelta(minutes=i) for i in range(60)]
    per_minute = [(m, sum(m <= h.at < m + dt.timedelta(minutes=1) for h in views)) for m in minutes]
    assert [(dt.datetime.fromisoformat(p["t"]), p["value"]) for p in live["pageviews_per_minute"]] == per_minute
    for key, dim in (("top_pages", "page"), ("top_referrers", "ref")):
        by_value = grouped(views, lambda h, dim=dim: h.value(dim))
        visitors = {value: len({h.visitor for h in hs}) for value, hs in by_value.items()}
        top = sorted(((v, len(hs), visitors[v]) for v, hs in by_value.items()), key=lambda r: (-r[1], r[0]))
        assert [(row["value"], row["pageviews"], row["visitors"]) for row in live[key]] == top[:limit]
    pairs = Counter((h.ref, h.path) for h in views)
    flows = sorted(((ref, path, n) for (ref, path), n in pairs.items()), key=lambda f: (-f[2], f[0], f[1]))
    assert len(flows) > limit
    assert [(f["referrer"], f["page"], f["pageviews"]) for f in live["flows"]] == flows[: 4 * limit]  # flows: 4 a row
    # Nothing else was viewed in the last ten whole minutes, nor anything from twitter.com before.
    rising = [(r["value"], r["recent"], r["baseline_mean"]) for r in live["rising_pages"] + live["rising_referrers"]]
    assert rising == [("/launch", len(launch), 0.0), ("twitter.com", len(launch), 0.0)]
