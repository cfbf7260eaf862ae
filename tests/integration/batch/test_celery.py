"""The batch layer's Celery tasks run by a real worker process on the test stack's Redis.

The worker gets its own broker database (:data:`BROKER_DB`) and queue, its own Redis
database for the rollup lock (:data:`LOCK_DB`), archive directory, SQLite database (with
the sites) and Mongo database, so it cannot take or disturb anything else's work. Tasks
are sent by name, as beat sends them, and their outcome is read where operators read it:
the rollup documents, ``batch_runs``, ``job_runs`` and the worker's log.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pymongo
import pytest
import redis
from celery import Celery
from celery.schedules import crontab

from archive.lock import KEY as LOCK_KEY
from archive.schema import partition_path, to_row
from archive.store import Archive, ArchiveRow
from footfall.config import Config
from footfall.demo import DemoTraffic
from footfall_capture.events import Event, encode
from historical.rollups import REPO
from historical.store import DAILY, RUNS, DayDocuments, documents, hour_document, load_day
from historical.tasks import nightly_windows
from tests.reliability.faults import wait_for

BROKER_DB = 11  # reserved for this test: flushed before and after
LOCK_DB = 12  # the worker's REDIS_URL (rollup lock, realtime reads of reconciliation); flushed too
ROLLUP = "historical.tasks.rollup_days"
RUN_TIMEOUT_S = 600  # a Spark job on a busy 2-core machine


def _redis_url(cfg: Config, db: int) -> str:
    return cfg.redis_url.rsplit("/", 1)[0] + f"/{db}"


@dataclasses.dataclass
class Worker:
    cfg: Config  # what the worker process runs with
    queue: str
    sites: list[str]
    log_file: Path
    sender: Celery
    db: pymongo.database.Database

    def send(self, *args: object, **kwargs: object) -> str:
        return self.sender.send_task(ROLLUP, args=list(args), kwargs=kwargs, queue=self.queue).id

    def runs(self, task_id: str) -> list[dict]:
        return list(self.db["job_runs"].find({"detail.task_id": task_id}, sort=[("at", 1), ("_id", 1)]))

    def wait(self, task_id: str, statuses: tuple[str, ...] = ("complete", "failed")) -> list[dict]:
        """The task's ``job_runs`` records once one has a status in ``statuses``."""
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while time.monotonic() < deadline:
            runs = self.runs(task_id)
            if runs and runs[-1]["status"] in statuses:
                return runs
            time.sleep(0.25)
        pytest.fail(f"task {task_id} reached none of {statuses}; worker log:\n{self.log()[-4000:]}")

    def log(self) -> str:
        return self.log_file.read_text(errors="replace")

    def log_once(self, line: str, timeout_s: float = 30) -> str:
        """The worker's log once it holds ``line``.

        Celery logs a task's outcome after the task returns, so after the task's own
        ``job_runs`` record is written: a log read right after that record may miss it.
        """
        try:
            wait_for(lambda: line in self.log(), timeout_s, f"the worker logging {line!r}", every=0.1)
        except AssertionError as exc:
            pytest.fail(f"{exc}:\n{self.log()[-4000:]}")
        return self.log()

    def archive(self, site: str, events: list[Event]) -> None:
        """Write ``events`` to the archive as the archiver does (one file per partition)."""
        rows = [ArchiveRow(partition_path(site, e.ts), to_row(e, encode(e), 0, i)) for i, e in enumerate(events)]
        Archive(self.cfg.archive_url).write(rows)


def _manage(env: dict[str, str], *argv: str) -> None:
    subprocess.run([sys.executable, "manage.py", *argv], env=env, cwd=REPO, check=True, capture_output=True)


@pytest.fixture(scope="module")
def worker(cfg: Config, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Worker]:
    """A Celery worker (prefork, like production) with private broker, lock, archive, sites and Mongo."""
    run = uuid.uuid4().hex[:8]
    home = tmp_path_factory.mktemp("celery")
    wcfg = dataclasses.replace(
        cfg,
        archive_url=(home / "archive").as_uri(),
        mongo_db=f"test_celery_{run}",
        redis_url=_redis_url(cfg, LOCK_DB),
        celery_broker_url=_redis_url(cfg, BROKER_DB),
    )
    env = {
        **os.environ,
        "FOOTFALL_DATA_DIR": str(home),
        "DATABASE_URL": f"sqlite:///{home / 'footfall.sqlite3'}",
        "ARCHIVE_URL": wcfg.archive_url,
        "MONGO_DB": wcfg.mongo_db,
        "REDIS_URL": wcfg.redis_url,
        "CELERY_BROKER_URL": wcfg.celery_broker_url,
        "SPARK_MASTER": "local[2]",
        "PYTHONUNBUFFERED": "1",
    }
    sites = [f"cel-{run}-{n}" for n in ("a", "b")]
    _manage(env, "migrate", "--noinput")
    for site in sites:
        _manage(env, "create_site", site, "--domain", "demo.footfall.local", "--timezone", "UTC")
    for db in (BROKER_DB, LOCK_DB):
        redis.Redis.from_url(_redis_url(cfg, db)).flushdb()

    queue = f"test-celery-{run}"
    log_file = home / "worker.log"
    argv = [
        sys.executable, "-m", "celery", "-A", "footfall_server.celery_app", "worker", "--loglevel", "INFO",
        "--queues", queue, "--concurrency", "1", "--hostname", f"test-{run}@%h", "--without-mingle",
        "--without-gossip",
    ]  # fmt: skip
    with log_file.open("wb") as out:
        proc = subprocess.Popen(argv, env=env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    client: pymongo.MongoClient = pymongo.MongoClient(cfg.mongo_url, tz_aware=True)
    sender = Celery("footfall-test", broker=wcfg.celery_broker_url)
    handle = Worker(wcfg, queue, sites, log_file, sender, client[wcfg.mongo_db])
    try:
        deadline = time.monotonic() + 120
        while " ready." not in handle.log():
            assert proc.poll() is None, f"the worker exited:\n{handle.log()[-4000:]}"
            assert time.monotonic() < deadline, f"the worker did not start:\n{handle.log()[-4000:]}"
            time.sleep(0.25)
        yield handle
    finally:
        proc.send_signal(signal.SIGTERM)  # warm shutdown
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        sender.close()
        client.drop_database(wcfg.mongo_db)
        client.close()
        for db in (BROKER_DB, LOCK_DB):
            redis.Redis.from_url(_redis_url(cfg, db)).flushdb()


def day_of_traffic(site: str, day: dt.date, n: int = 300) -> list[Event]:
    """``n`` page views spread over a UTC day."""
    start = int(dt.datetime.combine(day, dt.time(), dt.UTC).timestamp() * 1000)
    gen = DemoTraffic(site_id=site, visitors=40, seed=7)
    return [gen.event(start + i * (86_400_000 // n) + 1000) for i in range(n)]


def expected(events: list[Event]) -> dict[str, int]:
    humans = {e.event_id: e for e in events if not (e.ua and e.ua.is_bot)}.values()
    return {
        "pageviews": sum(e.type == "pageview" for e in humans),
        "visitors": len({e.visitor_id for e in humans}),
    }


def corrupt(worker: Worker, site: str, day: dt.date) -> Path:
    """A damaged file in the day's archive (Spark cannot read it, so the job fails)."""
    start = int(dt.datetime.combine(day, dt.time(12), dt.UTC).timestamp() * 1000)
    path = Archive(worker.cfg.archive_url).root / partition_path(site, start) / "part-damaged.parquet"
    path.write_bytes(b"this is not a parquet file")
    return path


def seed_settled_day(worker: Worker, site: str, day: str) -> dict[str, list[dict]]:
    """Documents of ``day`` as an earlier night left them; returns them."""
    run = {"status": "complete", "events_read": 7, "finished_at": "earlier"}
    nine = dt.datetime.combine(dt.date.fromisoformat(day), dt.time(9), dt.UTC)
    hour = {**hour_document(day, "UTC", int(nine.timestamp() * 1000)), "pageviews": 7}
    load_day(worker.db, DayDocuments(site, day, {"pageviews": 7, "visitors": 3}, [hour], [], run))
    return documents(worker.db, site, [day])


def test_rollup_of_a_day_end_to_end_through_the_worker_retrying_a_transient_failure(worker: Worker) -> None:
    site = worker.sites[0]
    day = dt.datetime.now(dt.UTC).date() - dt.timedelta(days=1)
    events = day_of_traffic(site, day)
    worker.archive(site, events[:200])
    worker.archive(site, events[150:])  # an overlap: redelivered rows are counted once
    damaged = corrupt(worker, site, day)

    task_id = worker.send(day.isoformat(), day.isoformat(), [site], retries=2, retry_delay_s=8)
    first = worker.wait(task_id, statuses=("retrying", "failed"))[-1]
    assert first["status"] == "retrying", first
    assert "is not a Parquet file" in first["detail"]["error"]
    assert worker.db[DAILY].find_one({"_id": f"{site}|{day}"}) is None, "a failed attempt wrote documents"
    # The cause goes away before the retry runs: 8 s later, 32 polls of the wait above.
    damaged.unlink()
    runs = worker.wait(task_id)

    assert [(r["status"], r["detail"]["attempt"]) for r in runs] == [("retrying", 1), ("complete", 2)], runs
    assert runs[-1]["detail"]["site_days"] == 1
    assert runs[-1]["detail"]["events"] == 350  # rows read, before dedup
    daily = worker.db[DAILY].find_one({"_id": f"{site}|{day}"})
    assert {k: daily[k] for k in ("pageviews", "visitors")} == expected(events)
    assert worker.db[RUNS].find_one({"_id": f"{site}|{day}"})["status"] == "complete"
    log = worker.log_once(f"Task {ROLLUP}[{task_id}] succeeded")
    assert log.count(f"Task {ROLLUP}[{task_id}] received") == 2


def test_failed_rollup_with_no_retries_left_is_reported_and_changes_nothing(worker: Worker) -> None:
    """The task's last allowed attempt (here its only one: each Spark run costs a minute of CI)
    fails: it is reported and not retried. That each failure before it is retried exactly once
    is proven above and, over several failures, in tests/reliability/test_batch_failure.py."""
    site = worker.sites[1]
    day = dt.datetime.now(dt.UTC).date() - dt.timedelta(days=2)
    worker.archive(site, day_of_traffic(site, day))
    before = seed_settled_day(worker, site, day.isoformat())
    corrupt(worker, site, day)

    task_id = worker.send(day.isoformat(), day.isoformat(), [site], retries=0, retry_delay_s=1)
    runs = worker.wait(task_id)

    assert [(r["status"], r["detail"]["attempt"]) for r in runs] == [("failed", 1)], runs
    assert runs[0]["detail"]["error"].startswith("spark job failed"), runs
    assert "is not a Parquet file" in runs[0]["detail"]["error"], runs
    time.sleep(3)  # three times the retry delay: nothing runs a second time
    assert len(worker.runs(task_id)) == 1
    log = worker.log_once(f"Task {ROLLUP}[{task_id}] raised unexpected: RollupFailed")
    assert log.count(f"Task {ROLLUP}[{task_id}] received") == 1, "one delivery, no retry"
    assert f"Task {ROLLUP}[{task_id}] retry:" not in log
    assert f"rollup {day}..{day} failed (attempt 1, no retries left)" in log
    # Nothing half-written: the day is exactly as the earlier night left it, watermark included.
    assert documents(worker.db, site, [day.isoformat()]) == before
    assert worker.db[RUNS].find_one({"_id": f"{site}|{day}"})["finished_at"] == "earlier"
    # The lock was released: the next rollup is not kept waiting.
    assert redis.Redis.from_url(worker.cfg.redis_url).get(LOCK_KEY) is None


def test_beat_schedule_has_the_nightly_jobs_at_their_times() -> None:
    from footfall_server.celery_app import app

    app.loader.import_default_modules()  # what a worker does at start: every app's tasks module
    schedule = app.conf.beat_schedule
    assert app.conf.timezone == "UTC"
    assert app.conf.task_acks_late is True
    assert app.conf.worker_prefetch_multiplier == 1

    def cron(entry: str) -> crontab:
        value = schedule[entry]["schedule"]
        assert isinstance(value, crontab), entry
        return value

    nightly = cron("nightly-rollup")
    assert schedule["nightly-rollup"]["task"] == "historical.tasks.nightly_rollup"
    assert (nightly.hour, nightly.minute) == ({2}, {30})
    assert nightly.day_of_week == set(range(7))
    assert nightly.day_of_month == set(range(1, 32))
    compaction = cron("compact-archive")
    assert schedule["compact-archive"]["task"] == "historical.tasks.compact_archive"
    assert (compaction.hour, compaction.minute) == (set(range(24)), {17})
    retention = schedule["realtime-housekeeping"]
    assert retention["task"] == "realtime.tasks.realtime_housekeeping"
    assert retention["schedule"] == 60.0
    assert schedule["replay-spool"]["schedule"] == 300.0
    assert (schedule["make-salts-ahead"]["task"], schedule["make-salts-ahead"]["schedule"]) == (
        "collector.tasks.make_salts_ahead",
        600.0,
    )
    assert (schedule["check-alerts"]["task"], schedule["check-alerts"]["schedule"]) == (
        "alerts.tasks.check_alerts",
        60.0,
    )
    reports = cron("send-reports")
    assert schedule["send-reports"]["task"] == "alerts.tasks.send_reports"
    assert (reports.hour, reports.minute) == (set(range(24)), {7})
    # Every entry names a registered, late-acknowledged task, and expires before its next run.
    periods = {"nightly-rollup": 86_400, "compact-archive": 3600, "realtime-housekeeping": 60, "replay-spool": 300,
               "make-salts-ahead": 600, "check-alerts": 60, "send-reports": 3600}  # fmt: skip
    for name, entry in schedule.items():
        task = app.tasks[entry["task"]]
        assert task.acks_late, name
        assert 0 < entry["options"]["expires"] < periods[name], name
    assert app.tasks[ROLLUP].acks_late

    # The nightly window: each site's own yesterday plus the look-back days before it.
    now = dt.datetime(2026, 3, 10, 2, 30, tzinfo=dt.UTC)
    zones = {"a": "UTC", "b": "Europe/Berlin", "c": "America/Los_Angeles", "d": "Pacific/Kiritimati"}
    assert nightly_windows(zones, now, 3) == {
        ("2026-03-07", "2026-03-09"): ["a", "b", "d"],  # Kiritimati (UTC+14) is at 16:30 on the 10th
        ("2026-03-06", "2026-03-08"): ["c"],  # Los Angeles is still on the 9th (19:30)
    }
