"""Celery tasks of the batch layer: thin wrappers around domain functions.

All are idempotent (a rollup replaces whole days, compaction keeps every event id), so
``acks_late`` redelivery after a worker crash is harmless. The archive lock
(:mod:`archive.lock`, shared with the ``manage.py`` commands) keeps two rollups,
or a rollup and a compaction (which deletes files a running Spark job may have listed), from
running at once, even if two beat processes were started by mistake.

Every rollup attempt is recorded in MongoDB (collection ``job_runs``: ``complete``,
``retrying`` with the error, or ``failed`` once the retries are used up) and in the worker's
log, so a failed night is visible to operators, not only to Celery.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping
from zoneinfo import ZoneInfo

import redis
from celery import shared_task
from pymongo.errors import PyMongoError

from archive.compaction import compact_ended_hours
from archive.lock import ArchiveLock, ArchiveLockBusy, archive_lock
from archive.store import Archive
from footfall.config import footfall_config
from historical.rollups import RollupFailed, run_rollup, site_zones
from historical.store import connect

log = logging.getLogger(__name__)
LOCK_WAIT_S = 300  # a rollup that finds the lock taken tries again this much later
LOOKBACK_DAYS = 3  # re-roll recent days so late (straggler) events land on their day
ROLLUP_RETRIES = 3  # a failed rollup is retried this many times, then reported as failed
ROLLUP_RETRY_DELAY_S = 600  # first retry after 10 minutes, then 20, 40 (exponential)
RETRYABLE = (RollupFailed, PyMongoError, OSError, redis.RedisError)


def _record_job(task: str, status: str, detail: object) -> None:
    cfg = footfall_config()
    try:
        client, db = connect(cfg.mongo_url, cfg.mongo_db)
        db["job_runs"].insert_one({"task": task, "status": status, "detail": detail, "at": dt.datetime.now(dt.UTC)})
        client.close()
    except PyMongoError:
        log.exception("could not record the %s run", task)


def _describe(exc: BaseException, limit: int = 2000) -> str:
    """An error for operators: its first line, the causes Spark names, and its last lines."""
    lines = str(exc).splitlines() or [type(exc).__name__]
    causes = list(dict.fromkeys(ln.strip() for ln in lines[1:] if ln.lstrip().startswith("Caused by:")))[:5]
    head = "\n".join([lines[0], *causes])[: limit // 2]
    tail = "\n".join(lines[1:])[-(limit - len(head) - 5) :] if len(lines) > 1 else ""
    return f"{head}\n…\n{tail}" if tail else head


# max_retries=None: the task counts its own failures (``failures``), so waiting for the lock
# is not a failure; each failure sends exactly one retry message (the failed delivery is acked).
@shared_task(bind=True, acks_late=True, max_retries=None)
def rollup_days(
    self,  # noqa: ANN001
    first: str,
    last: str,
    sites: list[str] | None = None,
    retries: int = ROLLUP_RETRIES,
    retry_delay_s: float = ROLLUP_RETRY_DELAY_S,
    failures: int = 0,
) -> dict[str, object]:
    """Roll up local days ``[first, last]`` of ``sites`` (all when None): a backfill or the nightly run.

    A failure of the Spark job, MongoDB, Redis or the file system is recorded and retried up
    to ``retries`` times, after ``retry_delay_s`` doubling each time; then it is reported
    (logged as an error, recorded as ``failed``) and the task fails. Days are loaded whole
    (:mod:`historical.store`), so a failed attempt leaves each day as it was or completely
    replaced, and ``batch_runs`` names only days whose documents are complete.
    """
    cfg = footfall_config()
    lock = ArchiveLock(redis.Redis.from_url(cfg.redis_url), f"celery rollup_days {first}..{last}")
    try:
        lock.acquire(say=log.info)
    except ArchiveLockBusy as busy:
        log.warning("%s; trying %s..%s again in %ss", busy, first, last, LOCK_WAIT_S)
        raise self.retry(countdown=LOCK_WAIT_S) from None
    job = {"first": first, "last": last, "sites": sites, "task_id": self.request.id}
    try:
        result = run_rollup(cfg, dt.date.fromisoformat(first), dt.date.fromisoformat(last), sites)
    except RETRYABLE as exc:
        failures += 1
        detail = {**job, "attempt": failures, "error": _describe(exc)}
        if failures > retries:
            _record_job("rollup_days", "failed", detail)
            log.error("rollup %s..%s failed (attempt %d, no retries left): %s", first, last, failures, exc)
            raise
        countdown = retry_delay_s * 2 ** (failures - 1)
        _record_job("rollup_days", "retrying", {**detail, "retry_in_s": countdown})
        log.warning("rollup %s..%s failed (attempt %d), retrying in %ss: %s", first, last, failures, countdown, exc)
        lock.release()  # before the retry can start
        kwargs = {**self.request.kwargs, "retries": retries, "retry_delay_s": retry_delay_s, "failures": failures}
        raise self.retry(exc=exc, countdown=countdown, kwargs=kwargs) from exc
    except Exception as exc:  # not worth retrying (an unknown site, a bad date): report at once
        _record_job("rollup_days", "failed", {**job, "attempt": failures + 1, "error": _describe(exc)})
        log.exception("rollup %s..%s failed", first, last)
        raise
    finally:
        lock.release()
    summary = {**job, "attempt": failures + 1, "site_days": len(result.days), "events": result.events}
    _record_job("rollup_days", "complete", summary)
    return summary


def nightly_windows(zones: Mapping[str, str], now: dt.datetime, lookback_days: int) -> dict[tuple[str, str], list[str]]:
    """``{(first, last): sites}``: each site's local yesterday and the ``lookback_days - 1`` days
    before it. A day is rolled up only once it has ended in the site's own time zone."""
    windows: dict[tuple[str, str], list[str]] = {}
    for site, tz in sorted(zones.items()):
        last = now.astimezone(ZoneInfo(tz)).date() - dt.timedelta(days=1)
        first = last - dt.timedelta(days=max(lookback_days, 1) - 1)
        windows.setdefault((first.isoformat(), last.isoformat()), []).append(site)
    return windows


@shared_task(acks_late=True)
def nightly_rollup(lookback_days: int = LOOKBACK_DAYS) -> list[list[str]]:
    """Queue the rollup of every site's local yesterday plus the look-back window (one task
    per distinct window; they run one after the other under the rollup lock)."""
    windows = nightly_windows(site_zones(), dt.datetime.now(dt.UTC), lookback_days)
    for (first, last), sites in windows.items():
        rollup_days.delay(first, last, sites)
    return [[first, last, *sites] for (first, last), sites in windows.items()]


@shared_task(acks_late=True)
def compact_archive(min_files: int = 8) -> dict[str, int]:
    """Merge small archive files of hour partitions that stopped receiving events.

    Skipped (until the next hourly run) while a rollup holds the lock: compaction deletes
    the files it merged, which a running Spark job may already have listed."""
    cfg = footfall_config()
    try:
        with archive_lock(cfg.redis_url, "celery compact_archive", say=log.info):
            return compact_ended_hours(Archive.from_config(cfg), dt.datetime.now(dt.UTC), min_files=min_files)
    except ArchiveLockBusy as busy:
        log.info("%s; compaction waits for the next run", busy)
        return {"skipped": 1}
