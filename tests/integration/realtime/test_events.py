"""Custom events, their properties, goals and engaged time in the speed layer, over real Redis
(one Redis, the stack's three shards, Kafka and the workers): conversions and engaged time
exact, visitors within HyperLogLog error. The truths are computed here from the events, not
with the product's code."""

from __future__ import annotations

import datetime as dt
import random
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from zoneinfo import ZoneInfo

import msgspec
import pytest
import redis
from django.core.management import call_command

from footfall.config import Config
from footfall.demo import DemoTraffic
from footfall.goals import GoalSpec
from footfall_capture.events import Event, UserAgent
from historical.reads import RollupReads
from historical.store import connect
from query.conversions import Conversions
from query.params import Range
from query.service import QueryService, QuerySite
from realtime.keys import KeyLayout
from realtime.reads import Engagement, EventRow, GoalCount, RealtimeQueries
from realtime.store import CounterStore
from tests.integration.kafka_tail import produce
from tests.integration.realtime.conftest import Workers, sharded_store, wait_consumed
from tests.integration.realtime.test_exactly_once import end_offsets
from tests.integration.realtime.test_rebuild import forget

SEP = "\x1f"
CAP_MS = 30 * 60_000
GOALS = [
    GoalSpec("blog", "page", path="/blog/*"),
    GoalSpec("pricing", "page", path="/pricing"),
    GoalSpec("everything", "page", path="*"),
    GoalSpec("signup", "event", event="signup"),
    GoalSpec("pro", "event", event="signup", prop="plan", value="pro"),
    GoalSpec("three-seats", "event", event="signup", prop="seats", value="3"),
    GoalSpec("never", "event", event="nobody-sends-this"),
    GoalSpec("nowhere", "page", path="/no/such/*"),
]

PAGE_GOALS: dict[str, Callable[[str], bool]] = {  # the page goals above, written out
    "blog": lambda path: path.startswith("/blog/"),
    "pricing": lambda path: path == "/pricing",
    "everything": lambda path: True,
    "nowhere": lambda path: path.startswith("/no/such/"),
}


def mixed(site: str, now: int, n: int = 4000, seed: int = 21) -> list[Event]:
    """``n`` human events over the last 150 minutes: page views, signups (plan, seats), downloads
    (url), engagement reports (some over the cap, some negative) and a few bots' events."""
    gen, rng = DemoTraffic(site_id=site, visitors=400, seed=seed), random.Random(seed)
    events = []
    for i in range(n):
        e, r = gen.event(now - 150 * 60_000 + i * (150 * 60_000 // n)), rng.random()
        if r < 0.15:
            e = msgspec.structs.replace(
                e, type="signup", props={"plan": rng.choice(["pro", "free", "team"]), "seats": rng.randint(1, 3)}
            )
        elif r < 0.2:
            e = msgspec.structs.replace(e, type="download", props={"url": f"https://x.test/f{rng.randint(0, 3)}.pdf"})
        elif r < 0.5:
            ms = rng.choice([rng.randint(1000, 90_000), 40 * 60_000, -5])
            e = msgspec.structs.replace(e, type="engagement", props={"engaged_ms": ms, "scroll_depth": 50})
        if r > 0.98:
            e = msgspec.structs.replace(e, ua=UserAgent(browser="Googlebot", device="bot", is_bot=True))
        events.append(e)
    return events  # fmt: skip


def human(e: Event) -> bool:
    return not (e.ua is not None and e.ua.is_bot)


def ref_of(e: Event) -> str:
    return e.ref_domain or ("(unknown)" if e.referrer else "(direct)")


def text(value: object) -> str:
    return value if isinstance(value, str) else str(value)  # the props above are strings and small ints


def truth(events: list[Event], keep: Callable[[Event], bool]) -> dict[str, dict]:
    """Events and visitor sets per custom event, property value and goal; engaged time per page
    and referrer label; of the human events ``keep`` keeps."""
    kept = [e for e in events if human(e) and keep(e)]
    counts: dict[str, dict] = defaultdict(lambda: defaultdict(lambda: [0, set()]))
    for e in kept:
        if e.type not in ("pageview", "engagement"):
            for name, row in [("event", e.type), *((f"{e.type}{SEP}{k}", text(v)) for k, v in (e.props or {}).items())]:
                counts[name][row][0] += 1
                counts[name][row][1].add(e.visitor_id)
        for goal in GOALS:
            if goal.kind == "page":
                hit = e.type == "pageview" and PAGE_GOALS[goal.goal_id](e.path)
            else:
                hit = e.type == goal.event and (not goal.prop or text((e.props or {}).get(goal.prop)) == goal.value)
            if hit:
                counts["goal"][goal.goal_id][0] += 1
                counts["goal"][goal.goal_id][1].add(e.visitor_id)
        if e.type == "engagement":
            ms = min(max(e.props["engaged_ms"], 0), CAP_MS)
            for dim, value in (("page", e.path), ("ref", ref_of(e))):
                counts[f"engaged {dim}"][value][0] += ms
                counts[f"engaged {dim}"][value][1].add(e.event_id)  # the reports
    return counts


def close(estimate: int, exact: int) -> bool:
    return abs(estimate - exact) <= 0.03 * exact + 1


def check(queries: RealtimeQueries, site: str, events: list[Event], start: int, end: int) -> None:
    """Every new read against the truth of ``events`` in ``[start, end)``."""
    expected = truth(events, lambda e: start <= e.ts < end)
    names = queries.custom_events(site, start, end, limit=100)
    assert {r.value: r.events for r in names} == {k: v[0] for k, v in expected["event"].items()}
    estimates = {r.value: (r.visitors, len(expected["event"][r.value][1])) for r in names}
    assert all(close(*pair) for pair in estimates.values()), estimates
    for prop in ("plan", "seats"):
        rows = queries.event_properties(site, "signup", prop, start, end, limit=100)
        want = expected[f"signup{SEP}{prop}"]
        assert {r.value: r.events for r in rows} == {k: v[0] for k, v in want.items()}
        estimates = {r.value: (r.visitors, len(want[r.value][1])) for r in rows}  # (estimate, exact)
        assert all(close(*pair) for pair in estimates.values()), (prop, start, end, estimates)
    goals = queries.goal_counts(site, GOALS, start, end)
    assert set(goals) == {g.goal_id for g in GOALS}
    for goal_id, count in goals.items():
        conversions, visitors = expected["goal"].get(goal_id, (0, set()))
        assert count.conversions == conversions, goal_id
        assert close(count.visitors, len(visitors)), (goal_id, count, len(visitors))
    assert goals["never"] == goals["nowhere"] == GoalCount(0, 0)
    for dim in ("page", "ref"):
        want = {k: Engagement(ms, len(reports)) for k, (ms, reports) in expected[f"engaged {dim}"].items()}
        assert queries.engagement(site, dim, start, end) == want
    totals = queries.event_totals(site, start, end)
    assert totals == {
        "custom_events": sum(n for n, _ in expected["event"].values()),
        "engaged_ms": sum(ms for ms, _ in expected["engaged page"].values()),
        "engagements": sum(len(r) for _, r in expected["engaged page"].values()),
    }


def whole_minutes(events: list[Event]) -> tuple[int, int]:
    return min(e.ts for e in events) // 3_600_000 * 3_600_000, (max(e.ts for e in events) // 60_000 + 1) * 60_000


def test_custom_events_goals_and_engaged_time_are_exact_and_counted_once(store: CounterStore) -> None:
    """Over 150 minutes (whole hours read from hour keys, the rest from minutes) and over the
    last 30 minutes alone; a redelivered batch changes nothing."""
    site, now = f"ev-{uuid.uuid4().hex[:8]}", int(time.time() * 1000)
    events = mixed(site, now)
    assert store.apply(events, now).counted == len(events)
    queries = RealtimeQueries(store)
    start, end = whole_minutes(events)
    check(queries, site, events, start, end)
    check(queries, site, events, end - 30 * 60_000, end)
    before = (queries.goal_counts(site, GOALS, start, end), queries.engagement(site, "ref", start, end))
    assert store.apply(events[::3], now).duplicates == len(events[::3])
    assert (queries.goal_counts(site, GOALS, start, end), queries.engagement(site, "ref", start, end)) == before
    assert queries.engagement(site, "page", start, end, values=["/pricing", "/nowhere"]).keys() == {"/pricing"}


def test_sharded_answers_equal_the_truth(cfg: Config) -> None:
    """The stack's three Redis shards: each read sums the shards and answers the truth."""
    store = sharded_store(cfg)
    site, now = f"es-{uuid.uuid4().hex[:8]}", int(time.time() * 1000)
    events = mixed(site, now, seed=22)
    assert all(store.split(events))
    store.apply(events, now)
    start, end = whole_minutes(events)
    check(RealtimeQueries(store), site, events, start, end)


def test_made_up_event_names_and_values_stay_within_the_caps(cfg: Config) -> None:
    """A minute of 600 distinct event names, 600 distinct values of one property and
    engagement reports on 600 distinct pages, with caps of 5 values: every sorted set holds
    at most 5 values and (other), no sketch is made past them, and the totals still add up."""
    store = CounterStore(redis.Redis.from_url(cfg.redis_url), KeyLayout(minute_values=5, hour_values=5))
    site, now = f"ec-{uuid.uuid4().hex[:8]}", int(time.time() * 1000)
    minute = now // 60_000 - 1
    base = DemoTraffic(site_id=site, seed=5).event(minute * 60_000)

    def made(i: int, **changes: object) -> Event:
        return msgspec.structs.replace(base, event_id=str(uuid.uuid4()), ts=minute * 60_000 + i % 60_000,
                                       visitor_id=f"{i:016x}", **changes)  # fmt: skip

    spam = [made(i, type=f"spam-{i}") for i in range(600)]
    spam += [made(600 + i, type="signup", props={"plan": f"p{i}"}) for i in range(600)]
    spam += [made(1200 + i, type="engagement", path=f"/s/{i}", props={"engaged_ms": 1000}) for i in range(600)]
    for part in range(0, len(spam), 300):  # several batches: places are taken by the first ones
        store.apply(spam[part : part + 300], now)
    client, layout = store.client, store.layout
    hour = minute // 60
    sets = [layout.top(site, minute, "event"), layout.top(site, minute, "event_prop"),
            layout.hour_top(site, hour, "event"), layout.engagements(site, minute, "page"),
            layout.engaged_ms(site, minute, "page"), layout.hour_engaged_ms(site, hour, "page")]  # fmt: skip
    for key in sets:
        assert client.zcard(key) <= 6, key
        assert client.zscore(key, "(other)")
    sketches = [*client.scan_iter(match=f"ff:rt:{site}:{minute}:uv:event*", count=1000)]
    assert len(sketches) <= 2 * 6
    assert len([*client.scan_iter(match=f"ff:rt:{site}:*", count=1000)]) < 40
    queries, start, end = RealtimeQueries(store), minute * 60_000, (minute + 1) * 60_000
    assert sum(r.events for r in queries.custom_events(site, start, end, 100)) == 1200
    assert queries.event_totals(site, start, end) == {"custom_events": 1200, "engaged_ms": 600_000, "engagements": 600}
    engaged = queries.engagement(site, "page", start, end)
    assert sum(e.engaged_ms for e in engaged.values()) == 600_000
    assert sum(e.reports for e in engaged.values()) == 600
    other = queries.custom_events(site, start, end, 100)[0]
    assert other == EventRow("(other)", other.events, other.visitors)
    assert close(other.visitors, other.events)


def test_workers_count_custom_events_and_engagement_from_kafka(
    cfg: Config, rt_topic: str, store: CounterStore, workers: Workers, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Events on the log, 5 % of them twice, counted by a worker: the answers equal the truth;
    after the site's counters are lost, ``rebuild_realtime`` brings back the same answers."""
    site, now = f"ek-{uuid.uuid4().hex[:8]}", int(time.time() * 1000)
    events = mixed(site, now, n=3000, seed=23)
    produce(cfg, rt_topic, [*events, *events[::20]])
    workers.start()
    wait_consumed(store, workers.group, rt_topic, end_offsets(cfg, rt_topic))
    workers.stop()
    queries = RealtimeQueries(store)
    start, end = whole_minutes(events)
    check(queries, site, events, start, end)
    counted = (queries.goal_counts(site, GOALS, start, end), queries.engagement(site, "page", start, end),
               queries.event_properties(site, "download", "url", start, end))  # fmt: skip

    forget(store, site)
    assert queries.event_totals(site, start, end)["engaged_ms"] == 0
    monkeypatch.setattr("realtime.management.commands.rebuild_realtime.store_for", lambda *a, **k: store)
    call_command("rebuild_realtime", site=site, topic=rt_topic, no_progress=True)
    check(queries, site, events, start, end)
    assert (queries.goal_counts(site, GOALS, start, end), queries.engagement(site, "page", start, end),
            queries.event_properties(site, "download", "url", start, end)) == counted  # fmt: skip


def test_an_engagement_report_alone_makes_no_visitor_today(store: CounterStore, cfg: Config) -> None:
    """Today (the speed layer): one visitor views a page and signs up, another only sends an
    engagement report. One visitor, who converted: the goal's rate is 1.0, not 0.5."""
    site, now = f"eo-{uuid.uuid4().hex[:8]}", int(time.time() * 1000)
    gen = DemoTraffic(site_id=site, visitors=5, seed=3)
    base = next(e for e in (gen.event(now - 60_000) for _ in range(50)) if not (e.ua and e.ua.is_bot))
    converter, lone = "c0" * 16, "e0" * 16
    events = [
        msgspec.structs.replace(base, type="pageview", visitor_id=converter),
        msgspec.structs.replace(base, event_id=str(uuid.uuid4()), type="signup", props={}, visitor_id=converter),
        msgspec.structs.replace(base, event_id=str(uuid.uuid4()), type="engagement", props={"engaged_ms": 4000},
                                visitor_id=lone),
    ]  # fmt: skip
    assert store.apply(events, now).counted == 3
    client, db = connect(cfg.mongo_url, cfg.mongo_db)
    try:
        service = QueryService(RollupReads(db), RealtimeQueries(store), cfg.realtime_retention_s)
        moment = dt.datetime.fromtimestamp(now / 1000, dt.UTC)
        rng = Range(moment - dt.timedelta(minutes=5), moment + dt.timedelta(minutes=1), ZoneInfo("UTC"))
        goal = GoalSpec("signup", "event", event="signup")
        (row,) = Conversions(service).goals(QuerySite(site, "UTC"), rng, [goal])["results"]
        assert (row["visitors"], row["conversion_rate"]) == (1, 1.0)
        assert service.aggregate(QuerySite(site, "UTC"), rng, compare=False)["results"]["visitors"]["value"] == 1
    finally:
        client.close()
