"""Realtime workers over real Kafka and Redis: exact counts under duplicates, kills and sharing."""

from __future__ import annotations

import random
import time
import uuid

from confluent_kafka import Consumer, TopicPartition

from footfall.config import Config
from footfall.demo import DemoTraffic
from footfall_capture.events import Event
from footfall_capture.kafka import client_config
from realtime.reads import RealtimeQueries
from realtime.store import CounterStore
from tests.integration.kafka_tail import produce
from tests.integration.realtime.conftest import Workers, truth, wait_consumed

N = 20_000
DUP_RATE = 0.05


def traffic(site: str, n: int = N) -> tuple[list[Event], list[Event]]:
    """``n`` distinct page views over the last hour, and the stream with 5 % duplicates mixed in."""
    now = int(time.time() * 1000)
    gen = DemoTraffic(site_id=site, visitors=3000, seed=42)
    distinct = [gen.event(now - 3_600_000 + int(i * 3_600_000 / n)) for i in range(n)]
    rng = random.Random(7)
    stream = distinct + rng.sample(distinct, int(n * DUP_RATE))
    rng.shuffle(stream)
    return distinct, stream


def end_offsets(cfg: Config, topic: str) -> dict[int, int]:
    consumer = Consumer(client_config(cfg.kafka, **{"group.id": "offsets-probe"}))
    parts = consumer.list_topics(topic, timeout=10).topics[topic].partitions
    ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in parts}
    consumer.close()
    return ends


def assert_exact(store: CounterStore, site: str, distinct: list[Event]) -> None:
    expected = truth(distinct)
    queries = RealtimeQueries(store)
    start = min(e.ts for e in distinct) // 60_000 * 60_000
    end = (max(e.ts for e in distinct) // 60_000 + 1) * 60_000
    series = dict(queries.timeseries(site, "pageviews", start, end))
    assert {t // 60_000: v for t, v in series.items() if v} == dict(expected["minute"])
    pages = {r.value: r.pageviews for r in queries.top(site, "page", start, end, limit=1000)}
    assert pages == dict(expected["page"])
    refs = {r.value: r.pageviews for r in queries.top(site, "ref", start, end, limit=1000)}
    assert refs == dict(expected["ref"])
    totals = queries.totals(site, start, end)
    assert totals["pageviews"] == len(distinct)
    true_visitors = len(expected["visitors"])
    assert abs(totals["visitors"] - true_visitors) <= 0.03 * true_visitors, (totals["visitors"], true_visitors)


def test_duplicates_are_counted_once(cfg: Config, rt_topic: str, store: CounterStore, workers: Workers) -> None:
    """20,000 events with 5 % duplicate ids: counters equal the distinct truth exactly."""
    site = f"rt-{uuid.uuid4().hex[:8]}"
    distinct, stream = traffic(site)
    produce(cfg, rt_topic, stream)
    workers.start()
    wait_consumed(store, workers.group, rt_topic, end_offsets(cfg, rt_topic))
    assert_exact(store, site, distinct)


def test_kill_9_workers_repeatedly_loses_and_doubles_nothing(
    cfg: Config, rt_topic: str, store: CounterStore, workers: Workers
) -> None:
    """Two workers share the partitions; one is SIGKILLed every 1.5 s and restarted while they
    consume. The final counters equal the truth: 0 lost, 0 double-counted."""
    site = f"rt-{uuid.uuid4().hex[:8]}"
    distinct, stream = traffic(site)
    produce(cfg, rt_topic, stream)
    ends = end_offsets(cfg, rt_topic)
    workers.start()
    workers.start()
    from tests.integration.realtime.conftest import consumed

    deadline = time.monotonic() + 240
    while not consumed(store, workers.group, rt_topic, ends) and time.monotonic() < deadline:
        time.sleep(1.5)
        if workers.kills < 8:
            workers.kill9(workers.procs[workers.kills % len(workers.procs)])
            workers.start()
    wait_consumed(store, workers.group, rt_topic, ends, timeout=120)
    assert workers.kills >= 3, "the workers finished before being killed enough to prove anything"
    assert_exact(store, site, distinct)


def test_invalid_and_future_events_go_to_the_invalid_topic(
    cfg: Config, rt_topic: str, store: CounterStore, workers: Workers
) -> None:
    """Garbage, a future event and a good event: only the good one is counted; the rest reach
    events.invalid with their reason."""
    from tests.integration.kafka_tail import TopicTail

    site = f"rt-{uuid.uuid4().hex[:8]}"
    gen = DemoTraffic(site_id=site, seed=1)
    now = int(time.time() * 1000)
    good = gen.event(now - 60_000)
    future = gen.event(now + 3_600_000)
    tail = TopicTail(cfg, cfg.invalid_topic)
    produce(cfg, rt_topic, [b"{not json", good, future, b'{"site_id": "%s"}' % site.encode()])
    workers.start()
    invalid = tail.read(lambda m: m.value() in {b"{not json"} or site.encode() in m.value(), 3, timeout=60)
    tail.close()
    reasons = sorted(dict(m.headers())["reason"].decode() for m in invalid)
    assert reasons == ["future_event", "invalid_field", "malformed_json"]
    # Every message of the topic counted (or sent on) and committed: nothing more can arrive.
    wait_consumed(store, workers.group, rt_topic, end_offsets(cfg, rt_topic))
    assert RealtimeQueries(store).totals(site, now - 3_600_000, now + 7_200_000)["pageviews"] == 1
