"""Operational figures of the realtime layer: consumer lag, throughput, dedup hits, invalid events.

:func:`realtime_health` gathers them (Kafka for offsets, Redis for the rest) into one
plain dict; ``manage.py realtime_stats`` prints it and records it in Redis
(``ff:rt:health``) for the dashboard's health panel.
"""

from __future__ import annotations

import json
import time
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from footfall.config import Config
from footfall.unreadable import skip
from footfall_capture.kafka import client_config
from realtime.store import CounterStore

HEALTH_KEY = "ff:rt:health"
STALE_WORKER_MS = 30_000


def consumer_lag(cfg: Config, group: str, topic: str) -> dict[int, int]:
    """Messages not yet committed by ``group``, per partition of ``topic``."""
    consumer = Consumer(client_config(cfg.kafka, **{"group.id": group}))
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        tps = [TopicPartition(topic, p) for p in partitions]
        committed = {tp.partition: tp.offset for tp in consumer.committed(tps, timeout=10)}
        lag = {}
        for tp in tps:
            low, high = consumer.get_watermark_offsets(tp, timeout=10)
            start = committed[tp.partition] if committed[tp.partition] >= 0 else low
            lag[tp.partition] = max(0, high - start)
        return lag
    finally:
        consumer.close()


def _heartbeat(beat: bytes) -> dict[str, Any] | None:
    """A worker's heartbeat as its worker wrote it (``at`` and ``events_per_s`` numbers), else None."""
    try:
        info = json.loads(beat)
    except ValueError:
        return None
    if not isinstance(info, dict):
        return None
    numbers = [info.get(name) for name in ("at", "events_per_s")]
    if not all(isinstance(n, int | float) and not isinstance(n, bool) for n in numbers):
        return None
    return info


def worker_heartbeats(store: CounterStore, now_ms: int) -> dict[str, dict[str, Any]]:
    """Each worker's last heartbeat, with ``alive``: whether it beat in the last
    :data:`STALE_WORKER_MS`; one that is not a worker's JSON is skipped and counted."""
    workers = {}
    for worker, beat in store.client.hgetall(store.layout.workers).items():
        info = _heartbeat(beat)
        if info is None:
            skip("worker heartbeat", beat)
            continue
        info["alive"] = now_ms - info["at"] < STALE_WORKER_MS
        workers[worker.decode(errors="replace")] = info
    return workers


def newest_event_ms(store: CounterStore, site_id: str) -> int | None:
    """Event time of the newest counted event of ``site_id`` on any shard, None when none is active."""
    key = store.layout.active(site_id)
    newest = [top[0][1] for c in store.shards if (top := c.zrevrange(key, 0, 0, withscores=True))]
    return int(max(newest)) if newest else None


def realtime_health(cfg: Config, store: CounterStore, group: str) -> dict[str, object]:
    now = int(time.time() * 1000)
    lag = consumer_lag(cfg, group, cfg.events_topic)
    stats = store.stats()
    workers = worker_heartbeats(store, now)
    return {
        "at": now,
        "group": group,
        "lag_total": sum(lag.values()),
        "lag": lag,
        "events_per_s": round(sum(w["events_per_s"] for w in workers.values() if w["alive"]), 1),
        "workers_alive": sum(1 for w in workers.values() if w["alive"]),
        "workers": workers,
        "stats": stats,
    }


def record(store: CounterStore, health: dict[str, object]) -> None:
    store.client.set(HEALTH_KEY, json.dumps(health), ex=24 * 3600)
