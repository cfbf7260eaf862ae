"""Celery tasks of the speed layer (found by autodiscovery; scheduled in :mod:`footfall_server.celery_schedule`)."""

from __future__ import annotations

import json
import time

from celery import shared_task

from footfall.config import footfall_config
from realtime.health import realtime_health, record
from realtime.runtime import GROUP, get_store

STALE_AFTER_MS = 86_400_000  # a worker silent this long is gone, not restarting


@shared_task(acks_late=True)
def realtime_housekeeping() -> dict[str, int]:
    """Drop heartbeats of workers gone for a day; record the realtime health snapshot."""
    store = get_store()
    now_ms = int(time.time() * 1000)
    gone = [
        worker
        for worker, beat in store.client.hgetall(store.layout.workers).items()
        if now_ms - int(json.loads(beat)["at"]) > STALE_AFTER_MS
    ]
    if gone:
        store.client.hdel(store.layout.workers, *gone)
    record(store, realtime_health(footfall_config(), store, GROUP))
    return {"stale_workers_removed": len(gone)}
