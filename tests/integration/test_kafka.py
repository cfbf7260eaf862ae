"""Kafka over a real connection: the project's topics exist and events round-trip."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from footfall.config import Config
from footfall.demo import DemoTraffic
from footfall.kafka_client import consumer_config
from footfall_capture.events import decode, encode
from footfall_capture.kafka import producer_config


def test_project_topics_exist_with_several_partitions(cfg: Config, kafka_admin: AdminClient) -> None:
    """The stack created `events` (partitioned for parallel workers) and `events.invalid`."""
    topics = kafka_admin.list_topics(timeout=10).topics
    assert len(topics[cfg.events_topic].partitions) >= 3
    assert cfg.invalid_topic in topics


def test_events_round_trip_keyed_by_visitor(cfg: Config, kafka_topic: str) -> None:
    """Produced with the idempotent producer, consumed with manual commits: same events back,
    and one visitor's events all land on one partition in order."""
    traffic = DemoTraffic(seed=11, visitors=5)
    sent = [traffic.event(1_763_700_000_000 + i) for i in range(200)]
    delivered: list[object] = []
    producer = Producer(producer_config(cfg.kafka))
    for event in sent:
        producer.produce(
            kafka_topic, encode(event), key=event.visitor_id, on_delivery=lambda err, msg: delivered.append(err)
        )
    assert producer.flush(30) == 0
    assert delivered == [None] * len(sent)

    consumer = Consumer(consumer_config(cfg, f"g-{kafka_topic}"))
    consumer.subscribe([kafka_topic])
    received = []
    deadline = time.monotonic() + 60
    while len(received) < len(sent) and time.monotonic() < deadline:
        msg = consumer.poll(1.0)
        if msg is None or msg.error():
            continue
        received.append((msg.partition(), decode(msg.value())))
        consumer.store_offsets(msg)
    consumer.commit(asynchronous=False)
    consumer.close()

    assert sorted(e.event_id for _, e in received) == sorted(e.event_id for e in sent)
    partitions_of: dict[str, set[int]] = {}
    for partition, event in received:
        partitions_of.setdefault(event.visitor_id, set()).add(partition)
    assert all(len(p) == 1 for p in partitions_of.values())
    for visitor in partitions_of:
        mine = [e.ts for _, e in received if e.visitor_id == visitor]
        assert mine == sorted(mine)


def test_committed_offsets_resume_without_redelivery(cfg: Config, kafka_topic: str) -> None:
    """A consumer in the same group after a commit sees only what came later."""
    producer = Producer(producer_config(cfg.kafka))
    traffic = DemoTraffic(seed=2)
    first = [traffic.event(1_763_700_000_000 + i) for i in range(10)]
    for event in first:
        producer.produce(kafka_topic, encode(event), key=event.visitor_id)
    producer.flush(30)

    def drain(expected: int) -> list[str]:
        consumer = Consumer(consumer_config(cfg, f"resume-{kafka_topic}"))
        consumer.subscribe([kafka_topic])
        got: list[str] = []
        deadline = time.monotonic() + 30
        while len(got) < expected and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                got.append(decode(msg.value()).event_id)
                consumer.store_offsets(msg)
        # Give a redelivery a moment to show itself before committing and leaving.
        extra = consumer.poll(2.0)
        if extra is not None and not extra.error():
            got.append(decode(extra.value()).event_id)
        consumer.commit(asynchronous=False)
        consumer.close()
        return got

    assert sorted(drain(10)) == sorted(e.event_id for e in first)
    second = [traffic.event(1_763_700_100_000 + i) for i in range(5)]
    for event in second:
        producer.produce(kafka_topic, encode(event), key=event.visitor_id)
    producer.flush(30)
    assert sorted(drain(5)) == sorted(e.event_id for e in second)
