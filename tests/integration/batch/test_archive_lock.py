"""Operators' commands hold the archive lock the Celery tasks hold (real Redis, Spark, Mongo-wire).

A manual rollup and a compaction started together run one after the other, each saying whom
it waited for; a command that cannot get the lock in time exits non-zero naming the holder;
an interrupted rollup stops its Spark job and frees the lock. Each test's lock lives in a
Redis database of its own (:data:`LOCK_DB`), so nothing else's lock can be mistaken for it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pymongo
import pytest
import redis
from django.core.management import call_command
from django.core.management.base import CommandError

from archive.lock import KEY, ArchiveLock
from archive.schema import partition_path, to_row
from archive.store import Archive, ArchiveRow, read_event_ids
from footfall.config import Config
from footfall.demo import DemoTraffic
from footfall.models import Site
from footfall_capture.events import encode
from historical.rollups import REPO
from historical.store import DAILY, daily_id

LOCK_DB = 13  # reserved for these tests: flushed before and after
DAY = dt.date(2026, 1, 10)  # long ended: every hour of it is ready for compaction
FILES_PER_HOUR = 8  # compaction's default threshold
STAMP = r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)"


@pytest.fixture
def lock_cfg(cfg: Config, tmp_path: Path) -> Iterator[Config]:
    """The test stack's services with a fresh archive, Mongo database and lock database."""
    url = cfg.redis_url.rsplit("/", 1)[0] + f"/{LOCK_DB}"
    client = redis.Redis.from_url(url)
    client.flushdb()
    name = f"lock-{uuid.uuid4().hex[:8]}"
    yield dataclasses.replace(cfg, redis_url=url, archive_url=(tmp_path / "archive").as_uri(), mongo_db=f"test_{name}")
    client.flushdb()
    pymongo.MongoClient(cfg.mongo_url).drop_database(f"test_{name}")


def manage(cfg: Config, *argv: str) -> subprocess.Popen[str]:
    env = {**os.environ, "REDIS_URL": cfg.redis_url, "ARCHIVE_URL": cfg.archive_url}
    return subprocess.Popen(
        [sys.executable, "manage.py", *argv],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def archive_in_small_files(cfg: Config, site: str) -> int:
    """Write a day of page views, each hour in :data:`FILES_PER_HOUR` files with some events in
    two of them (as after a lost offset commit); return how many distinct events there are."""
    gen = DemoTraffic(site_id=site, visitors=40, seed=7)
    start = int(dt.datetime(DAY.year, DAY.month, DAY.day, tzinfo=dt.UTC).timestamp() * 1000)
    events = [gen.event(start + i * 27_000) for i in range(3200)]  # 24 h, 400 events per file-hour batch
    archive = Archive(cfg.archive_url)
    for n in range(FILES_PER_HOUR):
        batch = events[n::FILES_PER_HOUR] + events[(n + 1) % FILES_PER_HOUR :: FILES_PER_HOUR * 10]
        archive.write([ArchiveRow(partition_path(site, e.ts), to_row(e, encode(e), 0, i)) for i, e in enumerate(batch)])
    return len({e.event_id for e in events})


def lock_span(output: str) -> tuple[str, str]:
    """When a command took the archive lock and when it let go, from its own lines."""
    took = re.search(f"took the archive lock at {STAMP}", output)
    released = re.search(f"releasing the archive lock at {STAMP}", output)
    assert took, output
    assert released, output
    return took.group(1), released.group(1)


@pytest.mark.django_db
def test_a_manual_rollup_and_a_compaction_started_together_never_overlap(
    lock_cfg: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One runs, the other says it waits for it and starts only after it let go; the rollup's
    figures equal a recount of the archive, which the compaction merged without losing an event."""
    site = f"lock-{uuid.uuid4().hex[:8]}"
    Site.objects.create(site_id=site, name="Archive lock", domains=["example.com"], timezone="UTC")
    distinct = archive_in_small_files(lock_cfg, site)
    monkeypatch.setattr("historical.management.commands.rollup.footfall_config", lambda: lock_cfg)

    compaction = manage(lock_cfg, "compact_archive", "--lock-timeout", "600")
    out = io.StringIO()
    call_command("rollup", "--date", DAY.isoformat(), "--site", site, "--no-progress", stdout=out)
    compacted, errors = compaction.communicate(timeout=600)

    assert compaction.returncode == 0, errors
    rolled = out.getvalue()
    # The rollup, started in this process, got the lock first; the compaction waited for it.
    assert re.search(
        rf"waiting for the archive lock held by manage.py rollup {DAY}..{DAY} \(pid {os.getpid()} ", compacted
    )
    rollup_took, rollup_released = lock_span(rolled)
    compaction_took, compaction_released = lock_span(compacted)
    assert rollup_took < rollup_released <= compaction_took < compaction_released
    assert f"merged {24 * FILES_PER_HOUR} files in 24 hours" in compacted
    ids = read_event_ids(Archive(lock_cfg.archive_url))
    assert len(ids) == len(set(ids)) == distinct  # compacted: every event once
    daily = pymongo.MongoClient(lock_cfg.mongo_url)[lock_cfg.mongo_db][DAILY].find_one(
        {"_id": daily_id(site, DAY.isoformat())}
    )
    assert daily is not None
    assert daily["pageviews"] == distinct
    assert redis.Redis.from_url(lock_cfg.redis_url).get(KEY) is None


@pytest.mark.django_db
def test_a_command_that_cannot_get_the_lock_in_time_refuses_naming_the_holder(
    lock_cfg: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a job holds the lock, ``compact_archive --lock-timeout 2`` waits, saying for whom,
    then exits 1; ``rollup --lock-timeout 0`` refuses at once, before starting Spark."""
    site = f"lock-{uuid.uuid4().hex[:8]}"
    Site.objects.create(site_id=site, name="Archive lock", domains=["example.com"], timezone="UTC")
    holder = ArchiveLock(redis.Redis.from_url(lock_cfg.redis_url), "a test's long rollup")
    holder.acquire()
    try:
        waiter = manage(lock_cfg, "compact_archive", "--lock-timeout", "2")
        said, errors = waiter.communicate(timeout=120)
        assert waiter.returncode == 1
        assert f"waiting for the archive lock held by a test's long rollup (pid {os.getpid()} " in said
        assert "the archive lock is held by a test's long rollup" in errors
        assert "gave up after waiting 2 s" in errors
        assert "--lock-timeout" in errors
        assert "merged" not in said

        monkeypatch.setattr("historical.management.commands.rollup.footfall_config", lambda: lock_cfg)
        with pytest.raises(CommandError, match=r"held by a test's long rollup .* since .*--lock-timeout"):
            call_command("rollup", "--date", DAY.isoformat(), "--site", site, "--lock-timeout", "0")
        still = holder.holder()
        assert still is not None
        assert still.name.startswith("a test's long rollup")
    finally:
        holder.release()


def _spark_jobs_reading(archive_url: str) -> list[int]:
    """Processes whose command line names ``archive_url`` (the rollup's Spark job)."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and archive_url.encode() in (proc / "cmdline").read_bytes():
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


@pytest.mark.django_db
def test_an_interrupted_rollup_stops_its_spark_job_and_frees_the_lock(
    lock_cfg: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C (a real SIGINT) once Spark's Python driver runs: the job's processes are stopped
    before the lock is let go."""
    site = f"lock-{uuid.uuid4().hex[:8]}"
    Site.objects.create(site_id=site, name="Archive lock", domains=["example.com"], timezone="UTC")
    archive_in_small_files(lock_cfg, site)
    monkeypatch.setattr("historical.management.commands.rollup.footfall_config", lambda: lock_cfg)
    seen: dict[str, object] = {}

    def press_ctrl_c() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            # The JVM and the driver it starts both name the archive: two means the job is under way.
            if len(jobs := _spark_jobs_reading(lock_cfg.archive_url)) >= 2:
                seen["jobs"], seen["holder"] = jobs, redis.Redis.from_url(lock_cfg.redis_url).get(KEY)
                os.kill(os.getpid(), signal.SIGINT)
                return
            time.sleep(0.1)

    presser = threading.Thread(target=press_ctrl_c, daemon=True)
    presser.start()
    out = io.StringIO()
    with pytest.raises(KeyboardInterrupt):
        call_command("rollup", "--date", DAY.isoformat(), "--site", site, "--no-progress", stdout=out)
    presser.join()

    assert seen["jobs"]
    assert seen["holder"]
    # Stopped before the lock was let go; a process killed with SIGKILL may take a moment to vanish.
    deadline = time.monotonic() + 10
    while _spark_jobs_reading(lock_cfg.archive_url) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _spark_jobs_reading(lock_cfg.archive_url) == []
    assert redis.Redis.from_url(lock_cfg.redis_url).get(KEY) is None
    assert "releasing the archive lock" in out.getvalue()
