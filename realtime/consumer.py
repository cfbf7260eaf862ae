"""The realtime worker: a Kafka consumer group that keeps the minutely Redis counters.

A lean batch loop on confluent-kafka (arroyo's per-message strategies cost more than the
counting itself)::

    consume(up to N messages or T seconds) ─▶ decode + validate ─▶ split by shard
      ─▶ per shard: aggregate + one atomic Redis step (counts, dedup marks, offsets)
      ─▶ commit the offsets to Kafka (about once a second)

Exactly once, per shard (see :mod:`realtime.store`): each shard records the offsets its
counts cover, in the step that writes them. When partitions are assigned, the worker reads
every shard's record and starts each partition at the least of them (at the group's Kafka
offset when no shard records one); each shard then takes only the messages past its own
record, so a redelivery after a crash, a rebalance or a shard restarted from an older
append-only file counts nothing twice and loses nothing. If a shard's record moved under
the worker (another worker wrote after a rebalance, a shard came back older), the step
writes nothing, and the worker re-reads the records and seeks back to them. Kafka's
committed offsets only say where a group stands for lag and for a shard that lost its data
(then ``rebuild_realtime`` restores it).

A step moves a record across every message between it and the batch's end, so the worker
takes a partition's messages only in sequence from where it last assigned or sought it: the
consumer may still hand out messages fetched before a rebalance or a seek (an assignment is
applied by librdkafka's own thread after the callback returns), and one counted past a gap
would leave the messages of the gap uncounted on that shard for good. Those are left out; a
partition that skips ahead is sought back to where the worker stands, and a gap that is still
there after that seek is a real one (retention deleted the messages): it is logged and passed.

Invalid messages go to the invalid-events topic with a ``reason`` header (flushed before
their offsets are recorded) and never reach the counters; so do events from the future
beyond a small clock skew. A retried beacon repeats its event id and visitor, so it reaches
the same worker and shard; each worker remembers the fingerprints it counted lately
(:class:`RecentlyCounted`, bounded) and leaves such repeats out before the Redis step, and
the shard's dedup marks catch the rest within the dedup window.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from confluent_kafka import OFFSET_STORED, Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from footfall.config import Config
from footfall.kafka_client import CLOSE_LIMIT_S, GroupWatch, close_within, consumer_config
from footfall_capture.events import Event, InvalidEvent, decode
from footfall_capture.kafka import producer_config
from realtime.keys import fingerprint
from realtime.merge import MergeSchedule
from realtime.store import ApplyResult, CounterStore, OffsetsMoved, Prepared

log = logging.getLogger(__name__)

MAX_FUTURE_SKEW_MS = 5 * 60 * 1000
RECENT_IDS = 200_000  # default size of a worker's RecentlyCounted (about 20 MB)
COMMIT_EVERY_S = 1.0
# Events per batch at most: a batch's Redis step costs per distinct key and value as well as
# per event, and at 20,000 a step cost Redis about 40 % less per event than at 5,000 in
# bench/realtime_bench.py's stream. A batch is cut BATCH_TIME_S after the previous one
# whatever its size, so an event waits at most that plus a batch's processing.
BATCH_SIZE = 20_000
BATCH_TIME_S = 0.25


class RecentlyCounted:
    """Fingerprints of the last ``size`` distinct events this worker knows are counted.

    First in, first out: once ``size`` keys are held, each new key evicts the oldest, so the
    memory rises to its bound during the first ``size`` events and then stays flat (a
    two-generation scheme would swing between half and all of it). ``size`` >= 1."""

    def __init__(self, size: int = RECENT_IDS) -> None:
        self.size = max(size, 1)
        self._keys: set[tuple[str, int]] = set()
        self._order: deque[tuple[str, int]] = deque()

    def __contains__(self, key: tuple[str, int]) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    def clear(self) -> None:
        self._keys.clear()
        self._order.clear()

    def update(self, keys: Iterable[tuple[str, int]]) -> None:
        held, order = self._keys, self._order
        for key in keys:
            if key not in held:
                held.add(key)
                order.append(key)
        while len(order) > self.size:
            held.discard(order.popleft())


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


class RealtimeWorker:
    """One member of the realtime consumer group; ``run()`` until ``signal_shutdown()``."""

    def __init__(
        self,
        consumer: Consumer,
        dlq: Producer,
        store: CounterStore,
        topic: str,
        invalid_topic: str,
        group: str,
        max_batch_size: int = BATCH_SIZE,
        max_batch_time: float = BATCH_TIME_S,
        recent: RecentlyCounted | None = None,
        on_batch: Callable[[int, int], None] | None = None,
        now_ms: Callable[[], int] = lambda: int(time.time() * 1000),
        merges: MergeSchedule | None = None,
    ) -> None:
        """``merges``: merges the value sketches of the closed hours of the sites counted
        (realtime.keys, Value hours); None leaves that to another worker or a rebuild."""
        self.consumer, self.dlq, self.store = consumer, dlq, store
        self.merges = merges
        self.topic, self.invalid_topic, self.group = topic, invalid_topic, group
        self.max_batch_size, self.max_batch_time = max_batch_size, max_batch_time
        self.recent, self.on_batch, self.now_ms = recent, on_batch, now_ms
        self._stop = False
        # Per shard, the next offset it records per "topic:partition" (None: no record).
        self._expected: list[dict[str, int | None]] = [{} for _ in store.shards]
        self._done: dict[int, int] = {}  # partition -> next offset once every shard has its batch
        # Per assigned partition, the next offset the worker reads (None: the first the consumer
        # gives, when no shard records one); and where it sought one back that skipped ahead.
        self._positions: dict[int, int | None] = {}
        self._gaps: dict[int, int] = {}  # partition -> the offset the consumer skipped ahead to
        self._committed: dict[int, int] = {}
        self._last_commit = time.monotonic()
        # One writer thread per shard: a batch's Redis steps run while the next batch is
        # decoded and aggregated (the GIL is released while a step waits on Redis).
        self._writers = ThreadPoolExecutor(max_workers=len(store.shards), thread_name_prefix="realtime-writer")
        self._pending: tuple[list[Future[ApplyResult]], dict[int, int], int] | None = None

    def signal_shutdown(self) -> None:
        self._stop = True

    def run(self) -> None:
        consumer = self.consumer
        consumer.subscribe([self.topic], on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_lost)
        try:
            cut = time.monotonic()
            while not self._stop:
                # A batch is cut max_batch_time after the previous cut, not after the previous
                # batch was processed: what arrived meanwhile waits no longer than that.
                wait = max(0.0, cut + self.max_batch_time - time.monotonic())
                messages = consumer.consume(self.max_batch_size, timeout=wait)
                cut = time.monotonic()
                if messages:
                    self._process(messages)
                else:
                    if self._pending is not None:  # nothing new: let the batch in flight finish
                        self._finish_pending()
                    if self.merges is not None:  # caught up: every hour that ended a while ago is closed
                        self.merges.seen((), self.now_ms())
                if time.monotonic() - self._last_commit >= COMMIT_EVERY_S:
                    self._commit(asynchronous=True)
            self._finish_pending()
            self._commit(asynchronous=False)
        finally:
            self._writers.shutdown(wait=True)
            if self.merges is not None:
                self.merges.close()
            self.dlq.flush(30)
            close_within(consumer.close, CLOSE_LIMIT_S, "the realtime consumer")

    # -- assignment --------------------------------------------------------------------

    def _field(self, partition: int) -> str:
        return f"{self.topic}:{partition}"

    def _load_records(self, partitions: Iterable[int]) -> dict[int, int | None]:
        """Read every shard's record for ``partitions``; the least per partition (None: no shard has one).

        Records only move forward, so one below what this worker last expected of its shard
        means the shard lost steps (it came back from an older append-only file), perhaps this
        worker's: the events it remembers as counted are counted there no longer, and must not
        be left out when they are read again."""
        records = self.store.recorded_offsets(self.group)
        starts: dict[int, int | None] = {}
        lost = False
        for partition in partitions:
            field = self._field(partition)
            for shard, record in enumerate(records):
                expected, now = self._expected[shard].get(field), record.get(field)
                lost = lost or (expected is not None and (now is None or now < expected))
                self._expected[shard][field] = now
            known = [record[field] for record in records if field in record]
            starts[partition] = min(known) if known else None
        if lost and self.recent is not None:
            self.recent.clear()
        return starts

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        starts = self._load_records(tp.partition for tp in partitions)
        assigned = []
        for tp in partitions:
            start = starts[tp.partition]
            assigned.append(TopicPartition(tp.topic, tp.partition, start if start is not None else OFFSET_STORED))
            self._done.pop(tp.partition, None)
            self._gaps.pop(tp.partition, None)
            self._positions[tp.partition] = start
            if start is not None:
                self._done[tp.partition] = start
        consumer.assign(assigned)
        log.info("assigned %s", {tp.partition: starts[tp.partition] for tp in partitions})

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._finish_pending(rewind=False)  # whoever gets them next starts from the shards' records
        self._commit(asynchronous=False)
        self._forget(partitions)
        consumer.unassign()

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._finish_pending(rewind=False)
        self._forget(partitions)  # another member owns them now: commit nothing for them
        consumer.unassign()

    def _forget(self, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            self._done.pop(tp.partition, None)
            self._committed.pop(tp.partition, None)
            self._positions.pop(tp.partition, None)
            self._gaps.pop(tp.partition, None)

    def _commit(self, asynchronous: bool) -> None:
        pending = [TopicPartition(self.topic, p, o) for p, o in self._done.items() if self._committed.get(p) != o]
        self._last_commit = time.monotonic()
        if not pending:
            return
        try:
            self.consumer.commit(offsets=pending, asynchronous=asynchronous)
        except KafkaException as exc:  # the counts and offsets are in Redis: a late commit loses nothing
            log.warning("committing offsets to Kafka failed: %s", exc)
            return
        self._committed.update({tp.partition: tp.offset for tp in pending})

    # -- batches -----------------------------------------------------------------------

    def _process(self, messages: Sequence[Message]) -> None:
        """Decode and aggregate this batch while the previous one's Redis steps run, then
        wait for those and hand this batch's steps to the writer threads."""
        store, shards, now = self.store, len(self.store.shards), self.now_ms()
        parts: list[list[Event]] = [[] for _ in range(shards)]
        following: dict[int, int] = {}
        invalid: list[tuple[Message, str]] = []
        expected, positions = self._expected, self._positions
        sought: set[int] = set()  # partitions sought back in this batch
        left_out = 0
        for message in messages:
            if (error := message.error()) is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    raise KafkaException(error)
                continue
            partition, offset = message.partition(), message.offset()
            if offset != positions.get(partition, -1) and not self._in_sequence(partition, offset, sought):
                left_out += 1
                continue
            positions[partition] = offset + 1
            following[partition] = offset + 1
            try:
                event = decode(message.value())
            except InvalidEvent as exc:
                invalid.append((message, exc.reason))
                continue
            if event.ts > now + MAX_FUTURE_SKEW_MS:
                invalid.append((message, "future_event"))
                continue
            shard = store.shard_of(event) if shards > 1 else 0
            recorded = expected[shard].get(self._field(partition))
            if recorded is None or offset >= recorded:  # else this shard counted it already
                parts[shard].append(event)
        if left_out:
            log.info("left out %d messages fetched before a rebalance or a seek", left_out)
        for partition in [p for p, skipped_to in self._gaps.items() if (positions.get(p) or -1) > skipped_to]:
            del self._gaps[partition]  # read up to where it skipped: that was no gap
        if not following:
            return
        steps: list[Prepared] = []
        received = 0
        for shard, events in enumerate(parts):
            offsets = {}
            for partition, next_offset in following.items():
                field = self._field(partition)
                recorded = expected[shard].get(field)
                if recorded is None or recorded < next_offset:
                    offsets[field] = (recorded, next_offset)
            events, marks, known = self._leave_out_recent(events, now)
            steps.append(store.prepare(shard, events, now, self.group, offsets, known, marks))
            received += len(events) + known
        if not self._finish_pending(also=following):
            return  # the previous batch found moved offsets: the consumer was sought back
        if invalid:
            self._send_invalid(invalid)
        for step in steps:  # what the shards will record once these steps succeed
            for field, (_, next_offset) in step.offsets.items():
                expected[step.shard][field] = next_offset
        futures = [self._writers.submit(store.send, step) for step in steps]
        self._pending = (futures, following, received)
        if self.merges is not None:
            oldest = min((e.ts for events in parts for e in events), default=now)
            self.merges.seen({site for step in steps for site in step.batch.marks}, min(oldest, now))

    def _finish_pending(self, also: Iterable[int] = (), rewind: bool = True) -> bool:
        """Wait for the batch in flight; False if a shard's offsets had moved (the worker then
        re-read every shard's records and, with ``rewind``, sought back to them, for the
        partitions of that batch and ``also`` those of a batch read since)."""
        if self._pending is None:
            return True
        futures, following, received = self._pending
        self._pending = None
        moved: OffsetsMoved | None = None
        duplicates = 0
        for future in futures:
            try:
                duplicates += future.result().duplicates
            except OffsetsMoved as exc:
                moved = exc
        if moved is not None:
            log.warning("%s: re-reading every shard's offsets and resuming from them", moved)
            if self.recent is not None:  # a shard may have lost marks of events this worker counted
                self.recent.clear()
            if rewind:
                self._rewind({*following, *also})
            return False
        self._done.update(following)
        if self.on_batch is not None:
            self.on_batch(received, duplicates)
        return True

    def _in_sequence(self, partition: int, offset: int, sought: set[int]) -> bool:
        """Whether a message that is not at its partition's position is taken: the first of a
        partition assigned without a position, or the first past a gap that a seek confirmed
        (the batch after the seek starts at the same offset). A partition that skips ahead is
        otherwise sought back to its position, once per batch (``sought``)."""
        position = self._positions.get(partition, -1)
        if position is None:
            return True
        if position == -1 or offset < position:  # fetched before a revoke, an assignment or a seek
            return False
        if partition in sought:
            return False
        if self._gaps.get(partition) == offset:
            log.warning("partition %d has no messages %d to %d (deleted): passing on", partition, position, offset - 1)
            del self._gaps[partition]
            return True
        log.info("partition %d skipped ahead from %d to %d: seeking back", partition, position, offset)
        self._gaps[partition] = offset
        sought.add(partition)
        self.consumer.seek(TopicPartition(self.topic, partition, position))
        return False

    def _leave_out_recent(self, events: list[Event], now: int) -> tuple[list[Event], list[bytes] | None, int]:
        """Leave out the events this worker counted lately, and remember the rest as counted
        (their step is sent next; if it fails, the memory is cleared). Returns the events
        kept, their fingerprints, and how many were left out."""
        recent = self.recent
        if recent is None or not events:
            return events, None, 0
        site_marks = [(e.site_id, fingerprint(e.event_id)) for e in events]
        kept = [(e, key) for e, key in zip(events, site_marks, strict=True) if key not in recent]
        oldest = now - self.store.layout.retention_s * 1000  # late events are never counted
        recent.update(key for e, key in zip(events, site_marks, strict=True) if e.ts >= oldest)
        return [e for e, _ in kept], [key[1] for _, key in kept], len(events) - len(kept)

    def _rewind(self, partitions: Iterable[int]) -> None:
        """Seek every partition of the batch back to the least offset its shards record."""
        starts = self._load_records(partitions)
        for partition, start in starts.items():
            target = start if start is not None else self._done.get(partition)
            if target is not None:
                self.consumer.seek(TopicPartition(self.topic, partition, target))
                self._positions[partition] = target
                self._gaps.pop(partition, None)

    def _send_invalid(self, invalid: list[tuple[Message, str]]) -> None:
        """To the invalid-events topic, flushed before the batch's offsets are recorded; counted
        in the stats (``invalid`` and ``invalid:<reason>``)."""
        for message, reason in invalid:
            headers = [*(message.headers() or []), ("reason", reason.encode()), ("source", b"realtime")]
            self.dlq.produce(self.invalid_topic, message.value(), key=message.key(), headers=headers)
        if self.dlq.flush(30):
            raise KafkaException(KafkaError(KafkaError._MSG_TIMED_OUT, "invalid events not delivered in 30 s"))
        pipe, stats = self.store.client.pipeline(), self.store.layout.stats
        for _, reason in invalid:
            pipe.hincrby(stats, "invalid", 1).hincrby(stats, f"invalid:{reason}", 1)
        pipe.execute()


def build_processor(
    cfg: Config,
    store: CounterStore,
    group: str,
    topic: str | None = None,
    max_batch_size: int = BATCH_SIZE,
    max_batch_time: float = BATCH_TIME_S,
    session_timeout_ms: int = 45_000,
    recent_ids: int = RECENT_IDS,
    watch: GroupWatch | None = None,
) -> RealtimeWorker:
    """A ready-to-run worker of the realtime consumer group.

    ``session_timeout_ms`` bounds how long the partitions of a worker that died without
    leaving the group (kill -9, a lost host) wait before another worker takes them.
    ``recent_ids``: how many counted event fingerprints the worker remembers to leave
    repeats out before the Redis step (0 turns it off). ``run()`` also returns, without a
    signal, when ``watch`` (default: a :class:`~footfall.kafka_client.GroupWatch` with its
    default limit) finds the consumer stuck outside its group: the caller then builds a new
    worker."""
    watch = watch or GroupWatch()
    settings = {
        "partition.assignment.strategy": "roundrobin",
        "session.timeout.ms": session_timeout_ms,
        "statistics.interval.ms": 1000,
        "stats_cb": watch.observe,
        # The batch loop asks for up to max_batch_size messages at once; let them arrive in bulk.
        "fetch.wait.max.ms": 100,
    }
    consumer = Consumer(consumer_config(cfg, group, **settings))
    worker_id = f"{socket.gethostname()}:{os.getpid()}"
    worker = RealtimeWorker(
        consumer,
        Producer(producer_config(cfg.kafka)),
        store,
        topic or cfg.events_topic,
        cfg.invalid_topic,
        group,
        max_batch_size,
        max_batch_time,
        recent=RecentlyCounted(recent_ids) if recent_ids > 0 else None,
        on_batch=Heartbeat(store, worker_id),
        merges=MergeSchedule(store),
    )
    # A consumer that cannot get back into its group ends run(); the caller builds a new one.
    watch.on_stuck = worker.signal_shutdown
    return worker
