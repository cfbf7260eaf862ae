"""The realtime worker: a Kafka consumer group that keeps the minutely Redis counters.

Built from Sentry's arroyo strategies rather than a hand-written poll loop, one small step
each::

    decode/validate ──▶ Reduce (batch by size and time) ──▶ write (aggregate + one atomic
    Redis step, see realtime.store) ──▶ CommitOffsets

Invalid messages raise arroyo's ``InvalidMessage`` in the first step and go to the
invalid-events topic with a ``reason`` header; they never reach the counters. Events from
the future beyond a small clock skew are invalid too. Offsets are committed only after the
batch's Redis write returned, so a crash at any point redelivers, and the store's dedup
marks make the redelivery count nothing twice. Several worker processes share the topic's
partitions; arroyo handles rebalancing (round-robin assignment).

A repeated event (a retried beacon) is keyed like its original, so it reaches the same
worker, usually a few batches later. Each worker remembers the dedup keys of the events it
counted lately (:class:`RecentlyCounted`, bounded) and leaves such repeats out before the
Redis step: otherwise the store's script finds their marks, and the whole batch is
aggregated and sent a second time. A repeat the worker does not remember (after a restart
or a rebalance, or older than the memory) is still caught by the marks in Redis.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from arroyo.backends.kafka import KafkaPayload, KafkaProducer
from arroyo.commit import ONCE_PER_SECOND
from arroyo.dlq import DlqLimit, DlqPolicy, InvalidMessage, KafkaDlqProducer
from arroyo.processing import StreamProcessor
from arroyo.processing.strategies import CommitOffsets, ProcessingStrategy, ProcessingStrategyFactory, Reduce, RunTask
from arroyo.types import BaseValue, BrokerValue, Commit, Message, Partition, Topic

from footfall.config import Config
from footfall.kafka_client import GroupWatch, group_consumer
from footfall_capture.events import Event, InvalidEvent, decode
from footfall_capture.kafka import producer_config
from realtime.store import CounterStore

log = logging.getLogger(__name__)

MAX_FUTURE_SKEW_MS = 5 * 60 * 1000
RECENT_IDS = 200_000  # default size of a worker's RecentlyCounted (about 30 MB)


@dataclass
class Accumulated:
    """A batch on its way to Redis: the events and the next offset of each partition."""

    events: list[Event] = field(default_factory=list)
    offsets: dict[str, int] = field(default_factory=dict)


def decode_message(message: Message[KafkaPayload], now_ms: Callable[[], int]) -> Event:
    """First step: bytes → validated event, or ``InvalidMessage`` (→ invalid-events topic)."""
    value = message.value
    assert isinstance(value, BrokerValue)
    try:
        event = decode(value.payload.value)
    except InvalidEvent as exc:
        raise InvalidMessage(value.partition, value.offset, reason=exc.reason, log_exception=False) from exc
    if event.ts > now_ms() + MAX_FUTURE_SKEW_MS:
        raise InvalidMessage(value.partition, value.offset, reason="future_event", log_exception=False)
    return event


def accumulate(acc: Accumulated, value: BaseValue[Event]) -> Accumulated:
    """Reduce step: collect events; remember the next offset per partition."""
    acc.events.append(value.payload)
    for partition, offset in value.committable.items():
        acc.offsets[f"{partition.topic.name}:{partition.index}"] = offset
    return acc


class RecentlyCounted:
    """Dedup keys of the last ``size`` distinct events this worker knows are counted.

    First in, first out: once ``size`` keys are held, each new key evicts the oldest, so the
    memory rises to its bound during the first ``size`` events and then stays flat (a
    two-generation scheme would swing between half and all of it). ``size`` >= 1."""

    def __init__(self, size: int = RECENT_IDS) -> None:
        self.size = max(size, 1)
        self._keys: set[str] = set()
        self._order: deque[str] = deque()

    def __contains__(self, key: str) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    def update(self, keys: Iterable[str]) -> None:
        held, order = self._keys, self._order
        for key in keys:
            if key not in held:
                held.add(key)
                order.append(key)
        while len(order) > self.size:
            held.discard(order.popleft())


class ReasonDlqProducer(KafkaDlqProducer):
    """arroyo's Kafka DLQ producer, plus the invalid-event reason as a ``reason`` header,
    counted in the store's stats (``invalid`` and ``invalid:<reason>``)."""

    def __init__(self, producer: KafkaProducer, topic: Topic, store: CounterStore) -> None:
        super().__init__(producer, topic)
        object.__setattr__(self, "_store", store)  # the parent is a frozen dataclass

    def produce(self, value: BrokerValue[KafkaPayload], reason: str | None = None) -> Any:
        reason = reason or "invalid"
        value.payload.headers.append(("reason", reason.encode()))
        value.payload.headers.append(("source", b"realtime"))
        stats = self._store.layout.stats
        self._store.client.pipeline().hincrby(stats, "invalid", 1).hincrby(stats, f"invalid:{reason}", 1).execute()
        return super().produce(value, reason)


class RealtimeStrategyFactory(ProcessingStrategyFactory[KafkaPayload]):
    """Builds the step chain for the partitions assigned to this worker."""

    def __init__(
        self,
        store: CounterStore,
        group: str,
        max_batch_size: int = 5000,
        max_batch_time: float = 0.5,
        on_batch: Callable[[int, int], None] | None = None,
        now_ms: Callable[[], int] = lambda: int(time.time() * 1000),
        recent: RecentlyCounted | None = None,
    ) -> None:
        self.store = store
        self.group = group
        self.max_batch_size = max_batch_size
        self.max_batch_time = max_batch_time
        self.on_batch = on_batch
        self.now_ms = now_ms
        self.recent = recent

    def _write(self, message: Message[Accumulated]) -> Accumulated:
        acc, now = message.payload, self.now_ms()
        events, known, recent = acc.events, 0, self.recent
        if recent is not None:
            layout = self.store.layout
            keys = [layout.dedup(e.site_id, e.event_id) for e in events]
            events = [e for e, key in zip(events, keys, strict=True) if key not in recent]
            known = len(keys) - len(events)
        result = self.store.apply(events, now, acc.offsets, self.group, known_duplicates=known)
        if recent is not None:  # all counted now (here or before), except late ones: those are never counted
            oldest = now - self.store.layout.retention_s * 1000
            recent.update(key for e, key in zip(acc.events, keys, strict=True) if e.ts >= oldest)
        if self.on_batch is not None:
            self.on_batch(len(acc.events), result.duplicates)
        return acc

    def create_with_partitions(
        self, commit: Commit, partitions: Mapping[Partition, int]
    ) -> ProcessingStrategy[KafkaPayload]:
        write = RunTask(self._write, CommitOffsets(commit))
        batch = Reduce(self.max_batch_size, self.max_batch_time, accumulate, Accumulated, write)
        return RunTask(lambda m: decode_message(m, self.now_ms), batch)


class Heartbeat:
    """Records this worker's throughput in Redis (``ff:rt:workers``) for ops and the dashboard."""

    def __init__(self, store: CounterStore, worker_id: str) -> None:
        self.store = store
        self.worker_id = worker_id
        self.events = self.duplicates = 0
        self._window_start = time.monotonic()
        self._window_events = 0

    def __call__(self, events: int, duplicates: int) -> None:
        self.events += events
        self.duplicates += duplicates
        self._window_events += events
        elapsed = time.monotonic() - self._window_start
        if elapsed < 5:
            return
        beat = {
            "at": int(time.time() * 1000),
            "events": self.events,
            "duplicates": self.duplicates,
            "events_per_s": round(self._window_events / elapsed, 1),
        }
        self.store.client.hset(self.store.layout.workers, self.worker_id, json.dumps(beat))
        self._window_start, self._window_events = time.monotonic(), 0


def build_processor(
    cfg: Config,
    store: CounterStore,
    group: str,
    topic: str | None = None,
    max_batch_size: int = 5000,
    max_batch_time: float = 0.5,
    session_timeout_ms: int = 45_000,
    recent_ids: int = RECENT_IDS,
    watch: GroupWatch | None = None,
) -> StreamProcessor[KafkaPayload]:
    """A ready-to-run arroyo processor for the realtime consumer group.

    ``session_timeout_ms`` bounds how long the partitions of a worker that died without
    leaving the group (kill -9, a lost host) wait before another worker takes them.
    ``recent_ids``: how many counted event ids the worker remembers to leave repeats out
    before the Redis step (about 150 bytes each, held from the first ``recent_ids`` events
    on; 0 turns it off). ``run()`` also returns, without a signal, when ``watch`` (default: a
    :class:`~footfall.kafka_client.GroupWatch` with its default limit) finds the consumer
    stuck outside its group: the caller then builds a new processor."""
    watch = watch or GroupWatch()
    consumer = group_consumer(cfg, group, session_timeout_ms, watch)
    dlq = DlqPolicy(
        ReasonDlqProducer(KafkaProducer(producer_config(cfg.kafka)), Topic(cfg.invalid_topic), store),
        DlqLimit(),
        max_buffered_messages_per_partition=None,
    )
    worker_id = f"{socket.gethostname()}:{os.getpid()}"
    recent = RecentlyCounted(recent_ids) if recent_ids > 0 else None
    factory = RealtimeStrategyFactory(
        store, group, max_batch_size, max_batch_time, Heartbeat(store, worker_id), recent=recent
    )
    processor = StreamProcessor(consumer, Topic(topic or cfg.events_topic), factory, ONCE_PER_SECOND, dlq_policy=dlq)
    # A consumer that cannot get back into its group ends run(); the caller builds a new one.
    watch.on_stuck = processor.signal_shutdown
    return processor
