"""Rebuild the realtime counters of a site and time range by replaying the Kafka log.

A rebuild clears the counters of the whole UTC hours its range touches (hour keys sum
whole hours) and the dedup marks of the events it will replay, then replays them: counts
that are missing (Redis lost its data) or wrong for any reason are recomputed from the log.
It always clears first because marks are only kept for the dedup window (see
:mod:`realtime.keys`): a replay over counts older than that could not tell what was
counted. The replay writes marks again (in the current generation), so it counts each
event id once however long its range, and a retry of a replayed event is still caught. A
rebuild races with live workers only for events arriving during the rebuild at the live
edge; rebuild ranges that end in the past, or stop the workers for the last minutes.
Once replayed, the closed hours of the range have their value sketches merged again (they
were cleared with the rest: see :mod:`realtime.keys`, Value hours), so readers find the
same state as the workers leave.

The log is read from ``offsets_for_times(start - 5 min)`` (events may be produced up to the
collector's clock skew before their own time) to the end offsets taken at the start.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator

from confluent_kafka import Consumer, TopicPartition

from footfall.config import Config
from footfall.kafka_client import consumer_config
from footfall_capture.events import Event, InvalidEvent, decode
from realtime.keys import HOUR_MS, bucket_of, fingerprint
from realtime.merge import HourMerger, closed_hours
from realtime.store import CounterStore

SKEW_MS = 5 * 60 * 1000
BATCH = 5000
_SITE = re.compile(r"^[a-z0-9][a-z0-9_\-]{0,63}$")


def _read(cfg: Config, topic: str, start_ms: int, progress: Callable[[int], None]) -> Iterator[Event]:
    consumer = Consumer(consumer_config(cfg, f"rebuild-{uuid.uuid4()}"))
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        starts = consumer.offsets_for_times(
            [TopicPartition(topic, p, start_ms - SKEW_MS) for p in partitions], timeout=30
        )
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in partitions}
        assignment = []
        for tp in starts:
            offset = tp.offset if tp.offset >= 0 else ends[tp.partition]  # -1: nothing that late
            if offset < ends[tp.partition]:
                assignment.append(TopicPartition(topic, tp.partition, offset))
        remaining = {tp.partition: ends[tp.partition] - tp.offset for tp in assignment}
        consumer.assign(assignment)
        while any(n > 0 for n in remaining.values()):
            for msg in consumer.consume(1000, timeout=1.0):
                if msg.error() is not None or remaining.get(msg.partition(), 0) <= 0:
                    continue
                if msg.offset() >= ends[msg.partition()]:
                    remaining[msg.partition()] = 0
                    continue
                remaining[msg.partition()] = ends[msg.partition()] - msg.offset() - 1
                progress(1)
                try:
                    yield decode(msg.value())
                except InvalidEvent:
                    continue  # the workers sent it to the invalid topic already
    finally:
        consumer.close()


def rebuild(
    cfg: Config,
    store: CounterStore,
    site: str,
    start_ms: int,
    end_ms: int,
    now_ms: int,
    topic: str | None = None,
    progress: Callable[[int], None] = lambda _: None,
) -> dict[str, int]:
    """Clear and replay ``site``'s counters of the whole hours ``[start_ms, end_ms)`` touches;
    return counts of what happened."""
    if not _SITE.match(site):
        raise ValueError(f"not a site id: {site!r}")
    if end_ms <= start_ms:
        raise ValueError("the end of the range must be after its start")
    topic = topic or cfg.events_topic
    # The hour keys (realtime.keys) are cleared whole, so their hours are replayed whole.
    start_ms, end_ms = start_ms // HOUR_MS * HOUR_MS, -(-end_ms // HOUR_MS) * HOUR_MS
    wanted = lambda e: e.site_id == site and start_ms <= e.ts < end_ms  # noqa: E731
    counts = {"read": 0, "counted": 0, "duplicates": 0, "late": 0, "deleted_keys": 0, "cleared_marks": 0}
    counts["merged_hours"] = 0
    counts["deleted_keys"] = _delete_range(store, site, start_ms, end_ms)
    counts["cleared_marks"] = _clear_marks(cfg, store, site, start_ms, topic, wanted, now_ms)
    batch: list[Event] = []
    for event in _read(cfg, topic, start_ms, progress):
        counts["read"] += 1
        if wanted(event):
            batch.append(event)
        if len(batch) >= BATCH:
            _apply(store, batch, now_ms, counts)
            batch = []
    if batch:
        _apply(store, batch, now_ms, counts)
    closed = closed_hours(start_ms, min(end_ms, now_ms), delay_ms=0)
    counts["merged_hours"] = HourMerger(store).merge(site, closed)
    return counts


def _apply(store: CounterStore, batch: list[Event], now_ms: int, counts: dict[str, int]) -> None:
    result = store.apply(batch, now_ms)
    counts["counted"] += result.counted
    counts["duplicates"] += result.duplicates
    counts["late"] += result.late


def _delete_range(store: CounterStore, site: str, start_ms: int, end_ms: int) -> int:
    deleted = 0
    minutes = range(start_ms // 60_000, -(-end_ms // 60_000))
    hours = range(start_ms // HOUR_MS, end_ms // HOUR_MS)  # whole hours: see rebuild()
    for client in store.shards:
        pipe = client.pipeline(transaction=False)
        # One SCAN of the site's keys: a SCAN walks the whole keyspace whatever its pattern,
        # so one per minute of the range would cost minutes x every key of every site. The
        # site id is validated above, so the pattern holds no user-supplied wildcards.
        for raw in client.scan_iter(match=store.layout.site_pattern(site), count=1000):
            key = raw.decode() if isinstance(raw, bytes) else raw
            bucket = bucket_of(key)
            if bucket is not None and bucket[1] in (minutes if bucket[0] == "minute" else hours):
                pipe.unlink(key)
                deleted += 1
                if len(pipe) >= 5000:
                    pipe.execute()
        pipe.execute()
    return deleted


def _clear_marks(
    cfg: Config, store: CounterStore, site: str, start_ms: int, topic: str, wanted: Callable[[Event], bool], now_ms: int
) -> int:
    """Remove the dedup marks of the events to replay from the generations that may hold them."""
    layout, cleared = store.layout, 0
    generation = layout.dedup_generation(now_ms)
    sets = [layout.dedup(site, g) for g in (generation, generation - 1)]
    pipes = [client.pipeline(transaction=False) for client in store.shards]
    for event in _read(cfg, topic, start_ms, lambda _: None):
        if wanted(event):
            fp = fingerprint(event.event_id)
            pipe = pipes[store.shard_of(event)]
            for key in sets:
                pipe.srem(key, fp)
            cleared += 1
            if len(pipe) >= 5000:
                pipe.execute()
    for pipe in pipes:
        pipe.execute()
    return cleared
