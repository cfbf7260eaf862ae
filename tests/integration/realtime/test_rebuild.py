"""Rebuilding realtime counters from the Kafka log: after data loss and after corruption, on
one Redis and on shards."""

from __future__ import annotations

import time
import uuid

from django.core.management import call_command

from footfall.config import Config
from footfall.demo import DemoTraffic
from realtime.reads import RealtimeQueries
from realtime.store import CounterStore
from tests.integration.kafka_tail import produce
from tests.integration.realtime.conftest import answers, sharded_store
from tests.integration.realtime.test_exactly_once import assert_exact


def forget(store: CounterStore, site: str) -> None:
    """Delete ``site``'s counters and dedup marks on every shard, as a Redis that lost its data."""
    for client in store.shards:
        keys = [*client.scan_iter(match=f"ff:rt:{site}:*"), *client.scan_iter(match=f"ff:rt:seen:{site}:*")]
        if keys:
            client.delete(*keys)


def test_rebuild_restores_lost_counters_and_repairs_corrupt_ones(
    cfg: Config, rt_topic: str, store: CounterStore, monkeypatch
) -> None:
    site = f"rb-{uuid.uuid4().hex[:8]}"
    now = int(time.time() * 1000)
    gen = DemoTraffic(site_id=site, seed=9)
    events = [gen.event(now - 30 * 60_000 + i * 900) for i in range(2000)]
    produce(cfg, rt_topic, events)
    queries = RealtimeQueries(store)
    start, end = now - 3_600_000, now + 60_000

    # Redis lost everything of this site: a plain replay restores it.
    forget(store, site)
    monkeypatch.setattr("realtime.management.commands.rebuild_realtime.store_for", lambda *a, **k: store)
    call_command("rebuild_realtime", site=site, topic=rt_topic, no_progress=True)
    assert queries.totals(site, start, end)["pageviews"] == 2000

    # Replaying again changes nothing (each event id counts once).
    call_command("rebuild_realtime", site=site, topic=rt_topic, no_progress=True)
    assert queries.totals(site, start, end)["pageviews"] == 2000

    # Counters went wrong (a minute and its hour alike): a reset rebuild of the range
    # recomputes them from the log, hour keys included.
    minute = events[0].ts // 60_000
    store.client.hincrby(store.layout.counters(site, minute), "pageviews", 500)
    store.client.hincrby(store.layout.hour_counters(site, minute // 60), "pageviews", 500)
    assert queries.totals(site, start, end)["pageviews"] == 2500
    call_command("rebuild_realtime", site=site, topic=rt_topic, reset=True, no_progress=True,
                 start=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start / 1000)))  # fmt: skip
    assert queries.totals(site, start, end)["pageviews"] == 2000
    by_page = {r.value: r.pageviews for r in queries.top(site, "page", start, end, limit=100)}
    assert sum(by_page.values()) == 2000


def test_rebuild_restores_counters_sharded_over_three_redis(cfg: Config, rt_topic: str, monkeypatch) -> None:
    """Counters sharded over the stack's three Redis, lost on every shard (counts and dedup
    marks): ``rebuild_realtime`` with the sharded store brings back exact counts, and a second
    rebuild changes nothing, visitors included."""
    site = f"rs-{uuid.uuid4().hex[:8]}"
    now = int(time.time() * 1000)
    gen = DemoTraffic(site_id=site, seed=11)
    events = [gen.event(now - 30 * 60_000 + i * 900) for i in range(2000)]
    produce(cfg, rt_topic, [*events, *events[::20]])  # 100 ids sent twice: retried beacons
    store = sharded_store(cfg)
    start, end = now - 3_600_000, now + 60_000
    assert store.apply(events, now).counted == 2000  # what the workers would have counted
    counted = answers(store, site, start, end)
    assert all(any(client.scan_iter(match=f"ff:rt:{site}:*")) for client in store.shards), "a shard got no events"

    forget(store, site)
    assert RealtimeQueries(store).totals(site, start, end)["pageviews"] == 0
    monkeypatch.setattr("realtime.management.commands.rebuild_realtime.store_for", lambda *a, **k: store)
    call_command("rebuild_realtime", site=site, topic=rt_topic, no_progress=True)
    assert answers(store, site, start, end) == counted
    assert_exact(store, site, events)
    rebuilt = RealtimeQueries(store).totals(site, start, end)

    # Each shard's marks of the replayed events are cleared again, so a second replay counts
    # them once more in place of the first: the same answers, the same visitor estimates.
    call_command("rebuild_realtime", site=site, topic=rt_topic, no_progress=True)
    assert answers(store, site, start, end) == counted
    assert RealtimeQueries(store).totals(site, start, end) == rebuilt
