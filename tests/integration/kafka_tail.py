"""Kafka helpers for tests: produce events, read what was appended to a topic, and list the
consumer groups the live tail would have left (it must leave none)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from footfall.config import Config
from footfall.kafka_client import consumer_config
from footfall_capture.events import Event, encode
from footfall_capture.kafka import client_config, producer_config
from realtime.live_tail import GROUP_PREFIX

NO_LEADER_YET = {
    KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE, KafkaError.UNKNOWN_TOPIC_OR_PART,
    KafkaError._UNKNOWN_PARTITION,
}  # fmt: skip


class TopicTail:
    """Messages appended to ``topic`` after construction."""

    def __init__(self, cfg: Config, topic: str) -> None:
        self.topic = topic
        self.consumer = Consumer(consumer_config(cfg, f"tail-{uuid.uuid4().hex}"))
        partitions = self.consumer.list_topics(topic, timeout=10).topics[topic].partitions
        self.start = [TopicPartition(topic, p, self._high(TopicPartition(topic, p))) for p in partitions]
        self.consumer.assign(self.start)

    def _high(self, tp: TopicPartition, timeout: float = 30.0) -> int:
        """The partition's end offset; a topic created a moment ago may have no leader yet (a
        retriable "not leader" on a busy broker), so that is retried for up to ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                return int(self.consumer.get_watermark_offsets(tp, timeout=10)[1])
            except KafkaException as exc:
                err = exc.args[0]
                if not (err.retriable() or err.code() in NO_LEADER_YET) or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def read(
        self, want: Callable[[Message], bool], count: int, timeout: float = 30.0, settle: float = 0.0
    ) -> list[Message]:
        """Messages matching ``want`` until ``count`` arrived (then ``settle`` seconds more, to
        catch duplicates) or ``timeout`` passed."""
        got: list[Message] = []
        deadline = time.monotonic() + timeout
        settle_until: float | None = None
        while time.monotonic() < deadline:
            if settle_until is None and len(got) >= count:
                settle_until = time.monotonic() + settle
            if settle_until is not None and time.monotonic() >= settle_until:
                break
            for msg in self.consumer.consume(500, timeout=0.5):
                if msg.error() is None and want(msg):
                    got.append(msg)
        return got

    def close(self) -> None:
        self.consumer.close()


def send(producer: Producer, topic: str, value: bytes, key: bytes | None = None) -> None:
    """``producer.produce``, waiting while librdkafka's local queue (100,000 messages) is full."""
    while True:
        try:
            producer.produce(topic, value, key=key)
            break
        except BufferError:  # the broker is behind (a busy machine): let it drain the queue
            producer.poll(0.5)
    producer.poll(0)


def produce(cfg: Config, topic: str, payloads: Sequence[bytes | Event]) -> None:
    """Put ``payloads`` on ``topic`` and wait until the broker has them all."""
    producer = Producer(producer_config(cfg.kafka))
    for item in payloads:
        if isinstance(item, bytes):
            send(producer, topic, item)
        else:
            send(producer, topic, encode(item), (item.visitor_id or item.event_id).encode())
    assert producer.flush(120) == 0


def tail_groups(cfg: Config) -> list[str]:
    """The consumer groups named like the live tail's: a tail that joined or committed left one."""
    # The client stays referenced until its future is done: a client freed while its request is
    # in flight left that future waiting for good once (a CI run hung here for 10 minutes).
    admin = AdminClient(client_config(cfg.kafka))
    listed = admin.list_consumer_groups(request_timeout=10).result(timeout=30)
    return [group.group_id for group in listed.valid if group.group_id.startswith(GROUP_PREFIX)]
