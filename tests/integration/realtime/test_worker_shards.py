"""The realtime worker's resume over real Redis shards, driven batch by batch through a
stand-in consumer (no Kafka): what it does when a shard comes back older than it wrote."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

import redis
from confluent_kafka import TopicPartition

from footfall.config import Config
from footfall.demo import DemoTraffic
from footfall_capture.events import encode
from realtime.consumer import RealtimeWorker, RecentlyCounted
from realtime.reads import RealtimeQueries
from realtime.store import APPLY, CounterStore
from tests.integration.realtime.conftest import shard_urls, sharded_store


@dataclass
class Message:
    """What the worker reads of a confluent-kafka message."""

    _partition: int
    _offset: int
    _value: bytes

    def error(self) -> None:
        return None

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def value(self) -> bytes:
        return self._value


class Consumer:
    """Where the worker would read from: assignments and seeks are only recorded."""

    def __init__(self) -> None:
        self.positions: dict[int, int] = {}

    def assign(self, partitions: list[TopicPartition]) -> None:
        self.positions.update({tp.partition: tp.offset for tp in partitions})

    def seek(self, tp: TopicPartition) -> None:
        self.positions[tp.partition] = tp.offset

    def unassign(self) -> None:
        self.positions.clear()

    def commit(self, offsets: list[TopicPartition], asynchronous: bool) -> None:
        pass


@dataclass
class Setup:
    """A worker over the stack's shards, a stand-in consumer and a partition's log of page views."""

    store: CounterStore
    site: str
    topic: str
    now: int
    log: list[Message]
    consumer: Consumer
    worker: RealtimeWorker
    partition: list[TopicPartition]


def set_up(cfg: Config, messages: int, seed: int) -> Setup:
    store = sharded_store(cfg)
    site, topic = f"ws-{uuid.uuid4().hex[:8]}", f"ws-{uuid.uuid4().hex[:8]}"
    now = int(time.time() * 1000)
    gen = DemoTraffic(site_id=site, visitors=200, seed=seed)
    log = [Message(0, offset, encode(gen.event(now - 60_000 + offset))) for offset in range(messages)]
    consumer = Consumer()
    worker = RealtimeWorker(consumer, None, store, topic, "unused", f"g-{topic}", recent=RecentlyCounted())
    return Setup(store, site, topic, now, log, consumer, worker, [TopicPartition(topic, 0)])


def test_a_shard_back_older_than_a_rebalance_is_counted_again(cfg: Config) -> None:
    """A worker counts two batches; the shard holding part of them comes back with the state of
    the first only (an append-only file that lost its last second) while the partition is
    revoked and assigned again. The worker resumes from that shard's record and counts the
    second batch's events on it again: its memory of counted ids must not leave them out."""
    up = set_up(cfg, 200, seed=12)
    store, site, topic, now, log = up.store, up.site, up.topic, up.now, up.log
    consumer, worker, partition = up.consumer, up.worker, up.partition
    worker._on_assign(consumer, partition)
    worker._process(log[:100])
    worker._finish_pending()
    # The second batch: its step to the last shard runs on a scratch database of that Redis (one
    # the stack's shards do not use otherwise), as if the shard acknowledged it and came back
    # from an append-only file that ends before it.
    lost, kept = len(store.shards) - 1, store._scripts[-1]
    scratch = redis.Redis.from_url(shard_urls().split(",")[lost].rsplit("/", 1)[0] + "/1")
    try:
        scratch.hset(store.layout.offsets(worker.group), f"{topic}:0", 100)  # what the shard recorded
        store._scripts[lost] = scratch.register_script(APPLY)
        worker._process(log[100:])
        worker._finish_pending()
    finally:
        store._scripts[lost] = kept
        scratch.flushdb()
    assert store.recorded_offsets(worker.group)[lost] == {f"{topic}:0": 100}

    worker._on_revoke(consumer, partition)
    worker._on_assign(consumer, partition)
    assert consumer.positions == {0: 100}  # the least record: the shard that came back older
    worker._process(log[100:])
    worker._finish_pending()
    worker._writers.shutdown()

    assert [record[f"{topic}:0"] for record in store.recorded_offsets(worker.group)] == [200] * len(store.shards)
    totals = RealtimeQueries(store).totals(site, now - 3_600_000, now + 60_000)
    assert totals["pageviews"] == 200


def test_messages_out_of_sequence_are_left_out_and_a_real_gap_is_passed(cfg: Config) -> None:
    """After a rebalance the consumer may still hand out messages fetched before it (librdkafka
    applies an assignment after the callback returns), here ones past the partition's records:
    counted, they would move the records over messages never counted. The worker leaves them
    out and seeks the partition back; a gap still there after that seek (messages deleted by
    retention) is passed."""
    up = set_up(cfg, 300, seed=13)
    store, site, topic, now, log = up.store, up.site, up.topic, up.now, up.log
    consumer, worker, partition = up.consumer, up.worker, up.partition

    def records() -> list[int]:
        return [record[f"{topic}:0"] for record in store.recorded_offsets(worker.group)]

    def read(first: int, end: int) -> None:
        worker._process(log[first:end])
        worker._finish_pending()

    worker._on_assign(consumer, partition)
    read(0, 100)
    worker._on_revoke(consumer, partition)
    worker._on_assign(consumer, partition)
    assert consumer.positions == {0: 100}
    read(150, 200)  # fetched before the rebalance, from further on
    assert consumer.positions == {0: 100}, "the partition is sought back to where the worker stands"
    assert records() == [100] * len(store.shards)
    read(100, 200)
    assert records() == [200] * len(store.shards)

    read(250, 260)  # messages 200 to 249 are gone from the log
    assert consumer.positions == {0: 200}
    assert records() == [200] * len(store.shards)
    read(250, 300)  # the consumer sought back still starts at 250: passed
    worker._writers.shutdown()

    assert records() == [300] * len(store.shards)
    totals = RealtimeQueries(store).totals(site, now - 3_600_000, now + 60_000)
    assert totals["pageviews"] == 250
