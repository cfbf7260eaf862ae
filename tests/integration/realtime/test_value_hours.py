"""Per-hour value sketches (realtime.keys, Value hours) over real Redis, one and three shards:
merged hours answer what their minutes answer, late events reach them, rebuilds remake them."""

from __future__ import annotations

import time
import uuid
from typing import Any

import msgspec
import pytest
import redis

from footfall.config import Config
from footfall.demo import DemoTraffic
from footfall.goals import EVENT, PAGE, GoalSpec
from footfall_capture.events import Event
from realtime.keys import HOUR_MS, MERGE_DELAY_MS, MERGED, MERGING
from realtime.merge import HourMerger, MergeSchedule, closed_hours
from realtime.reads import RealtimeQueries
from realtime.rebuild import rebuild
from realtime.store import CounterStore
from tests.integration.kafka_tail import produce
from tests.integration.realtime.conftest import Workers, shard_urls, sharded_store, wait_consumed
from tests.integration.realtime.test_exactly_once import end_offsets

GOALS = [
    GoalSpec("docs", PAGE, path="/docs*"),
    GoalSpec("blog", PAGE, path="/blog/*"),
    GoalSpec("signup", EVENT, event="signup"),
    GoalSpec("pro", EVENT, event="signup", prop="plan", value="pro"),
]


class MinutesOnly(RealtimeQueries):
    """The reads as they were before value hours: every minute's sketch, whatever is merged."""

    def merged_hours(self, site: str, minutes: range, now_ms: int | None = None) -> list[int]:
        return []


@pytest.fixture(params=["one", "shards"])
def any_store(request: pytest.FixtureRequest, cfg: Config, store: CounterStore) -> CounterStore:
    return store if request.param == "one" else sharded_store(cfg)


def traffic(site: str, now: int) -> list[Event]:
    """Page views and signups (with a plan) every 5 s over the last 230 minutes: three closed hours at least."""
    gen = DemoTraffic(site_id=site, visitors=300, seed=31)
    plans = ("pro", "free")
    return [
        msgspec.structs.replace(e, type="signup", props={"plan": plans[i // 6 % 2]}) if i % 6 == 0 else e
        for i, e in enumerate(gen.event(now - 230 * 60_000 + i * 5_000) for i in range(230 * 12))
    ]


def answers(queries: RealtimeQueries, site: str, start: int, end: int) -> tuple[object, ...]:
    """Every read that counts a value's visitors."""
    pages = ["/", "/pricing", "/docs/install", "/docs/api", "/blog/kafka-exactly-once", "/no-such-page"]
    spans = [(start, start + 100 * 60_000), (start + 100 * 60_000, end)]
    return (
        queries.visitors(site, "page", start, end, pages),
        queries.goal_counts(site, GOALS, start, end),
        queries.timeseries(site, "visitors", start, end, "hour", filter_=("ref", "google.com")),
        queries.spans(site, "visitors", spans, filter_=("page", "/pricing")),
        queries.custom_events(site, start, end),
        queries.event_properties(site, "signup", "plan", start, end),
        queries.top(site, "refpage", start, end, 20),
    )


def merge_closed(store: CounterStore, site: str, start: int, now: int) -> range:
    hours = closed_hours(start, now)
    assert HourMerger(store).merge(site, hours) == len(hours) * len(store.shards)
    return hours


class CountingRedis(redis.Redis):
    """A client of the same Redis that counts the scripts it ran (each one atomic step)."""

    scripts = 0

    def evalsha(self, *args: Any, **kwargs: Any) -> Any:
        result = super().evalsha(*args, **kwargs)  # a NOSCRIPT answer, then loaded and run again, counts once
        self.scripts += 1
        return result


def test_the_quiet_hours_of_a_site_are_marked_merged_in_one_step_per_shard(any_store: CounterStore) -> None:
    """Hours without an event of the site have nothing to merge: a worker's first look at a
    site over the retention window is one begin step per shard, not one per hour."""
    clients = [CountingRedis(connection_pool=client.connection_pool) for client in any_store.shards]
    store, site = CounterStore(clients, any_store.layout), f"vh-{uuid.uuid4().hex[:8]}"
    hours = range(int(time.time() // 3600) - 40, int(time.time() // 3600) - 1)  # closed, in the retention window
    assert HourMerger(store).merge(site, hours) == len(hours) * len(clients)
    assert [client.scripts for client in clients] == [1] * len(clients)
    assert all(HourMerger(store).is_merged(site, hour) for hour in hours)
    assert HourMerger(store).merge(site, hours) == 0


def test_merged_hours_answer_what_their_minutes_answer(any_store: CounterStore) -> None:
    """Same registers, same estimates: every visitor read equals the minute sketches' answer,
    from one sketch per merged hour; merging again does nothing."""
    store, site, now = any_store, f"vh-{uuid.uuid4().hex[:8]}", int(time.time() * 1000)
    store.apply(traffic(site, now), now)
    start, end = now - 235 * 60_000, now + 60_000
    before = answers(MinutesOnly(store), site, start, end)
    assert RealtimeQueries(store).merged_hours(site, range(start // 60_000, end // 60_000)) == []

    hours = merge_closed(store, site, start, now)
    assert len(hours) >= 2
    assert HourMerger(store).merge(site, hours) == 0  # merged already
    queries = RealtimeQueries(store)
    minutes = range(start // 60_000, end // 60_000)
    whole = [h for h in hours if h * 60 >= minutes.start]
    assert queries.merged_hours(site, minutes) == whole
    keys = queries._dim_visitor_keys(site, minutes, "page", "/pricing")
    assert len(keys) == len(minutes) - 59 * len(whole)
    assert answers(queries, site, start, end) == before
    goals = before[1]
    assert isinstance(goals, dict)
    assert goals["docs"].visitors > 0
    assert goals["pro"].visitors > 0


def test_a_late_event_into_a_merged_hour_is_counted(any_store: CounterStore) -> None:
    """A visitor counted after the merge, under a value the hour had and under a new one, is
    in the hour sketches too: the merged answers still equal the minutes'."""
    store, site, now = any_store, f"vh-{uuid.uuid4().hex[:8]}", int(time.time() * 1000)
    store.apply(traffic(site, now), now)
    start, end = now - 235 * 60_000, now + 60_000
    hour = merge_closed(store, site, start, now)[-1]
    queries = RealtimeQueries(store)
    conversions = queries.goal_counts(site, GOALS, start, end)["docs"].conversions
    gen = DemoTraffic(site_id=site, visitors=5, seed=77)
    late = [
        msgspec.structs.replace(gen.event(hour * HOUR_MS + 30 * 60_000), path=path, visitor_id=uuid.uuid4().hex * 2)
        for path in ("/docs/install", "/docs/late-page")
    ]
    store.apply(late, now)
    assert queries.merged_hours(site, range(start // 60_000, end // 60_000))[-1] == hour
    assert answers(queries, site, start, end) == answers(MinutesOnly(store), site, start, end)
    assert queries.goal_counts(site, GOALS, start, end)["docs"].conversions == conversions + 2
    new_page = store.layout.hour_dim_visitors(site, hour, "page", "/docs/late-page")
    assert sum(client.pfcount(new_page) for client in store.shards) == 1


def test_an_hour_being_merged_is_read_from_its_minutes(any_store: CounterStore) -> None:
    """While a shard's marker says merging, readers use the minute sketches, and a merge run
    again completes the hour with what was counted meanwhile."""
    store, site, now = any_store, f"vh-{uuid.uuid4().hex[:8]}", int(time.time() * 1000)
    store.apply(traffic(site, now), now)
    start, end = now - 235 * 60_000, now + 60_000
    hours = merge_closed(store, site, start, now)
    store.shards[-1].set(store.layout.hour_merged(site, hours[-1]), MERGING)  # an interrupted merge
    minutes = range(start // 60_000, end // 60_000)
    assert hours[-1] not in RealtimeQueries(store).merged_hours(site, minutes)
    gen = DemoTraffic(site_id=site, visitors=5, seed=78)
    store.apply([msgspec.structs.replace(gen.event(hours[-1] * HOUR_MS), path="/docs/while-merging")], now)
    assert HourMerger(store).merge(site, hours) == 1
    assert all(c.get(store.layout.hour_merged(site, hours[-1])) == MERGED for c in store.shards)
    assert answers(RealtimeQueries(store), site, start, end) == answers(MinutesOnly(store), site, start, end)


def _corrupt(store: CounterStore, site: str, hour: int) -> None:
    """Visitors in a merged hour's sketch of ``/pricing`` that no minute has."""
    for client in store.shards:
        client.pfadd(store.layout.hour_dim_visitors(site, hour, "page", "/pricing"), *(f"{i:016x}" for i in range(50)))


def test_a_rebuild_leaves_the_value_hours_consistent(cfg: Config, rt_topic: str, any_store: CounterStore) -> None:
    """A reset rebuild clears the hours' value sketches with the rest and merges the closed
    hours again: a corrupt hour sketch is repaired and the answers equal the minutes'."""
    store, site, now = any_store, f"vh-{uuid.uuid4().hex[:8]}", int(time.time() * 1000)
    events = traffic(site, now)
    produce(cfg, rt_topic, events)
    store.apply(events, now)
    start, end = now - 235 * 60_000, now + 60_000
    hours = merge_closed(store, site, start, now)
    truth = answers(MinutesOnly(store), site, start, end)
    _corrupt(store, site, hours[-1])
    assert answers(RealtimeQueries(store), site, start, end) != truth

    counts = rebuild(cfg, store, site, start, now + 1, int(time.time() * 1000), topic=rt_topic)
    assert counts["counted"] == len(events)
    assert counts["merged_hours"] >= len(hours) * len(store.shards)
    merger = HourMerger(store)
    assert all(merger.is_merged(site, h) for h in hours)
    queries = RealtimeQueries(store)
    assert queries.merged_hours(site, range(start // 60_000, end // 60_000))
    assert answers(queries, site, start, end) == answers(MinutesOnly(store), site, start, end) == truth


def test_a_worker_merges_the_closed_hours_of_the_sites_it_counts(cfg: Config, rt_topic: str) -> None:
    """A sharded ``run_realtime`` worker merges every closed hour of a site it counted, in each
    shard, and the merged answers equal the minutes'."""
    store, site, now = sharded_store(cfg), f"vh-{uuid.uuid4().hex[:8]}", int(time.time() * 1000)
    produce(cfg, rt_topic, traffic(site, now))
    pool = Workers(rt_topic, f"g-{rt_topic}", env={"FOOTFALL_REALTIME_REDIS_URLS": shard_urls()})
    pool.start()
    try:
        wait_consumed(store, pool.group, rt_topic, end_offsets(cfg, rt_topic))
        start, end = now - 235 * 60_000, now + 60_000
        hours, merger = closed_hours(start, int(time.time() * 1000)), HourMerger(store)
        deadline = time.monotonic() + 60
        while not all(merger.is_merged(site, h) for h in hours):
            assert time.monotonic() < deadline, "the worker did not merge the closed hours within 60 s"
            time.sleep(0.5)
    finally:
        pool.stop()
    assert len(hours) >= 3
    assert answers(RealtimeQueries(store), site, start, end) == answers(MinutesOnly(store), site, start, end)


def test_a_worker_merges_an_hour_once_its_watermark_is_past_it(store: CounterStore) -> None:
    """A worker catching up merges an hour only when it has read a while past the hour's end,
    then every closed hour of every site it counted (one that stopped sending events too)."""
    site, now = f"vh-{uuid.uuid4().hex[:8]}", int(time.time() * 1000)
    store.apply(traffic(site, now), now)
    hour = now // HOUR_MS - 2
    schedule, merger = MergeSchedule(store), HourMerger(store)
    try:
        schedule.seen([site], (hour + 1) * HOUR_MS + MERGE_DELAY_MS - 1)  # still reading the hour's last minutes
        schedule.wait()
        assert merger.is_merged(site, hour - 1)
        assert not merger.is_merged(site, hour)
        schedule.seen(["another-site"], (hour + 1) * HOUR_MS + MERGE_DELAY_MS)
        schedule.wait()
    finally:
        schedule.close()
    assert merger.is_merged(site, hour)
    assert not merger.is_merged(site, hour + 1)


def test_an_hour_without_events_is_merged_at_once_and_takes_late_ones(store: CounterStore) -> None:
    """An hour the site had no event in is marked merged in one step; an event counted into it
    later goes to its hour sketches, so the merged answer still equals the minutes'."""
    site, now = f"vh-{uuid.uuid4().hex[:8]}", int(time.time() * 1000)
    hour = now // HOUR_MS - 3
    assert HourMerger(store).merge(site, [hour]) == 1
    assert store.client.get(store.layout.hour_merged(site, hour)) == MERGED
    gen = DemoTraffic(site_id=site, visitors=5, seed=79)
    store.apply([msgspec.structs.replace(gen.event(hour * HOUR_MS + 60_000), path="/docs/late")], now)
    start, end = hour * HOUR_MS, (hour + 2) * HOUR_MS  # the next hour has no marker: its minutes are read
    queries = RealtimeQueries(store)
    assert queries.merged_hours(site, range(start // 60_000, end // 60_000)) == [hour]
    assert queries.visitors(site, "page", start, end, ["/docs/late"]) == [1]
    assert answers(queries, site, start, end) == answers(MinutesOnly(store), site, start, end)
