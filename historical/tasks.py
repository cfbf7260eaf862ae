"""Celery tasks of the batch layer: thin wrappers around domain functions.

All are idempotent (a rollup replaces whole days, compaction keeps every event id,
housekeeping only deletes what is expired), so ``acks_late`` redelivery after a worker
crash is harmless. A lock in Redis keeps two rollups from running at once even if two beat
processes were started by mistake.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import time

import redis
from celery import shared_task
from pymongo.errors import PyMongoError

from collector.runtime import footfall_config
from collector.sink import get_sink
from historical.archive import Archive
from historical.rollups import RollupFailed, run_rollup
from historical.store import connect
from realtime.health import realtime_health, record
from realtime.runtime import GROUP, get_store

log = logging.getLogger(__name__)
LOCK_KEY = "ff:lock:rollup"
LOCK_TTL_S = 6 * 3600
LOOKBACK_DAYS = 3  # re-roll recent days so late (straggler) events land on their day
COMPACT_AFTER_S = 2 * 3600  # an hour partition gets late events rarely after this


def _record_job(task: str, status: str, detail: object) -> None:
    cfg = footfall_config()
    try:
        client, db = connect(cfg.mongo_url, cfg.mongo_db)
        db["job_runs"].insert_one({"task": task, "status": status, "detail": detail, "at": dt.datetime.now(dt.UTC)})
        client.close()
    except PyMongoError:
        log.exception("could not record the %s run", task)


@shared_task(
    bind=True,
    acks_late=True,
    autoretry_for=(RollupFailed, PyMongoError, OSError),
    retry_backoff=60,
    retry_kwargs={"max_retries": 3},
)
def rollup_days(self, first: str, last: str, sites: list[str] | None = None) -> dict[str, object]:  # noqa: ANN001
    """Roll up local days ``[first, last]`` (a backfill or the nightly run)."""
    cfg = footfall_config()
    lock = redis.Redis.from_url(cfg.redis_url)
    token = f"{self.request.id}:{time.time()}"
    if not lock.set(LOCK_KEY, token, nx=True, ex=LOCK_TTL_S):
        log.warning("another rollup holds the lock; retrying later")
        raise self.retry(countdown=300)
    try:
        result = run_rollup(cfg, dt.date.fromisoformat(first), dt.date.fromisoformat(last), sites)
    except Exception as exc:
        _record_job("rollup_days", "failed", {"first": first, "last": last, "error": str(exc)[-2000:]})
        raise
    finally:
        if lock.get(LOCK_KEY) == token.encode():
            lock.delete(LOCK_KEY)
    summary = {"first": first, "last": last, "site_days": len(result.days), "events": result.events}
    _record_job("rollup_days", "complete", summary)
    return summary


@shared_task(acks_late=True)
def nightly_rollup(lookback_days: int = LOOKBACK_DAYS) -> None:
    """Yesterday (UTC) and the days before it within the look-back window."""
    today = dt.datetime.now(dt.UTC).date()
    first = today - dt.timedelta(days=lookback_days)
    rollup_days.delay(first.isoformat(), (today - dt.timedelta(days=1)).isoformat())


@shared_task(acks_late=True)
def compact_archive(min_files: int = 8) -> dict[str, int]:
    """Merge small archive files of hour partitions that stopped receiving events."""
    archive = Archive(footfall_config().archive_url)
    cutoff = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=COMPACT_AFTER_S)
    merged = partitions = 0
    for path in archive.partitions():
        date, hour = path.parent.name.split("=", 1)[1], path.name.split("=", 1)[1]
        if dt.datetime.fromisoformat(f"{date}T{hour}:00+00:00") + dt.timedelta(hours=1) > cutoff:
            continue
        done = archive.compact(path, min_files=min_files)
        merged += done
        partitions += bool(done)
    swept = archive.sweep_temporary()
    return {"partitions": partitions, "files_merged": merged, "temporary_removed": swept}


@shared_task(acks_late=True)
def realtime_housekeeping() -> dict[str, int]:
    """Drop heartbeats of workers gone for a day; record the realtime health snapshot."""
    store = get_store()
    now_ms = int(time.time() * 1000)
    gone = [
        worker
        for worker, beat in store.client.hgetall(store.layout.workers).items()
        if now_ms - int(json.loads(beat)["at"]) > 86_400_000
    ]
    if gone:
        store.client.hdel(store.layout.workers, *gone)
    record(store, realtime_health(footfall_config(), store, GROUP))
    return {"stale_workers_removed": len(gone)}


@shared_task(acks_late=True)
def replay_spool() -> int:
    """Send events spooled by collector processes that are gone (live ones replay their own)."""
    sink = get_sink(footfall_config())
    return sink.replay()
