"""Batch failure: the Spark job and the Mongo-wire server are SIGKILLed mid-write under a real
Celery worker; each failure is retried exactly once and the run that finally completes leaves
documents identical to an uninterrupted run's.

Two local days of traffic (duplicates, bots, stragglers) go through Kafka into the archive. The
job run uninterrupted gives the reference documents; an earlier night's documents of the day
that will be mid-write are left damaged (a stale document, a wrong total) and one rollup task is
sent whose attempts are broken in turn:
the Spark job's processes are SIGKILLed, or the Mongo-wire server is SIGKILLed (then started
again), each time once the first day is loaded and the second is being written (each day carries
a long tail of pages of their own, so a day's write takes seconds and every kill hits it). Spark
runs are what this costs, so CI uses the fewest that prove the point: the reference (in the test
run's Spark session), one attempt per kind of fault, and the completing retry.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import os
import signal
import time
from pathlib import Path
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

import msgspec
from pymongo.database import Database
from pyspark.sql import SparkSession

from deploy.local.services import SERVICES, Service, StackConfig
from footfall.demo import DemoTraffic
from footfall_capture.events import Event
from historical.store import BREAKDOWNS, DAILY, RUNS, documents
from spark_jobs import rollup as job
from tests.integration.batch.test_celery import ROLLUP, Worker, _manage, worker  # noqa: F401 - a fixture
from tests.integration.batch.test_rollup_e2e import TZ, archive_topic, assert_matches_truth, two_days_of_traffic
from tests.integration.batch.truth import exact
from tests.integration.conftest import kafka_admin, rt_topic  # noqa: F401 - fixtures
from tests.integration.kafka_tail import produce
from tests.reliability.conftest import Results, Row, size
from tests.reliability.faults import wait_for

MIDWRITE_TIMEOUT_S = 600  # a Spark run on a busy 2-core machine
# Page views per day on pages of their own: each adds breakdown documents (its page, entry
# page, referrer and referrer-to-page pair) to the day's load, so a day's write lasts long
# enough for a kill sent right after the first day lands to hit the second day's write.
LONG_TAIL_PER_DAY = 2000


def long_tail(site: str, days: list[str]) -> list[Event]:
    """``LONG_TAIL_PER_DAY`` page views on each of ``days``, every one on its own page."""
    gen = DemoTraffic(site_id=site, visitors=60, seed=8)
    events = []
    for day in days:
        noon = int(dt.datetime.combine(dt.date.fromisoformat(day), dt.time(12), ZoneInfo(TZ)).timestamp() * 1000)
        for i in range(LONG_TAIL_PER_DAY):
            event = gen.event(noon + i * 1000)
            path = f"/long-tail/{day}/{i}"
            events.append(
                msgspec.structs.replace(event, type="pageview", path=path, url=f"https://demo.footfall.local{path}")
            )
    return events


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def spark_job_pids(mongo_db: str) -> set[int]:
    """The processes of the rollup job writing to ``mongo_db`` (spark-submit's JVM, the Python
    driver) and all their descendants (PySpark workers)."""
    roots = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if any(a.endswith(b"spark_jobs/rollup.py") for a in argv) and mongo_db.encode() in argv:
                roots.add(int(entry.name))
    tree, found, todo = _children(), set(), list(roots)
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo += tree.get(pid, [])
    return found


def wait_spark_pids(mongo_db: str) -> set[int]:
    """:func:`spark_job_pids` once the running attempt's job has started."""
    pids: set[int] = set()

    def started() -> bool:
        pids.update(spark_job_pids(mongo_db))
        return bool(pids)

    wait_for(started, MIDWRITE_TIMEOUT_S, "the running attempt's Spark processes started", every=0.05)
    return pids


def sigkill(pids: set[int], sig: signal.Signals = signal.SIGKILL) -> None:
    """Send ``sig`` (SIGKILL) to each of ``pids`` that still exists."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def wait_gone(pids: set[int], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while any(Path(f"/proc/{p}").exists() and "Z" not in _state(p) for p in pids):
        assert time.monotonic() < deadline, f"processes {pids} outlived SIGKILL"
        time.sleep(0.05)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "Z"


def computed_at(db: Database, site: str, day: str) -> object:
    """When the day's documents in ``db`` were computed (None if it has none)."""
    doc = db[RUNS].find_one({"_id": f"{site}|{day}"})
    return doc and doc.get("computed_at")


def wait_mid_write(handle: Worker, site: str, days: list[str], before: dict[str, object]) -> None:
    """Until the running attempt has loaded the first day (its watermark changed), i.e. the
    second day is being written now."""
    deadline = time.monotonic() + MIDWRITE_TIMEOUT_S
    while computed_at(handle.db, site, days[0]) == before[days[0]]:
        assert time.monotonic() < deadline, f"no attempt loaded {days[0]}; worker log:\n{handle.log()[-4000:]}"
        time.sleep(0.02)


def wait_attempts(handle: Worker, task_id: str, count: int) -> list[dict]:
    """The task's ``job_runs`` once ``count`` attempts are recorded."""
    deadline = time.monotonic() + 120
    while len(runs := handle.runs(task_id)) < count:
        assert time.monotonic() < deadline, f"attempt {count} was not recorded; worker log:\n{handle.log()[-4000:]}"
        time.sleep(0.1)
    return runs


def mongo_service() -> Service:
    return SERVICES["mongo"](StackConfig.from_env(os.environ))


def test_spark_and_mongo_killed_mid_write_rerun_identical_retried_once_each(
    worker: Worker,  # noqa: F811 - the imported fixture
    rt_topic: str,  # noqa: F811
    results: Results,
    spark: SparkSession,
) -> None:
    started = time.monotonic()
    faults = ["spark", "mongo"] * size(1, 3)
    mongo = mongo_service()
    assert mongo.pid() is not None, "start the stack's mongo (deploy.local.stack start mongo)"

    # A site in the worker's own database, in the zone the reused truth is computed in.
    site = f"{worker.sites[0]}-berlin"
    home = Path(urlsplit(worker.cfg.archive_url).path).parent
    env = {**os.environ, "FOOTFALL_DATA_DIR": str(home), "DATABASE_URL": f"sqlite:///{home / 'footfall.sqlite3'}"}
    _manage(env, "create_site", site, "--domain", "demo.footfall.local", "--timezone", TZ)

    events, days = two_days_of_traffic(site)
    events += long_tail(site, days)
    produce(worker.cfg, rt_topic, events)
    archive_topic(worker.cfg, rt_topic, len(events))
    first, last = days[0], days[-1]

    # The reference: the job run uninterrupted, in the run's Spark session (a spark-submit
    # fewer), into a database of its own.
    ref_cfg = dataclasses.replace(worker.cfg, mongo_db=f"{worker.cfg.mongo_db}_reference")
    job.run(spark, dt.date.fromisoformat(first), dt.date.fromisoformat(last), {site: TZ}, ref_cfg.archive_url,
            ref_cfg.mongo_url, ref_cfg.mongo_db)  # fmt: skip
    ref_db = worker.db.client[ref_cfg.mongo_db]
    try:
        assert_matches_truth(ref_cfg, site, events, days)
        reference = documents(ref_db, site, days)
        # computed_at is taken just before each day's load: their gap is the first day's write.
        day_write_s = (computed_at(ref_db, site, last) - computed_at(ref_db, site, first)).total_seconds()  # type: ignore[operator]
    finally:
        worker.db.client.drop_database(ref_cfg.mongo_db)

    # Documents of an earlier night, damaged: a re-run must remove and repair, not only add.
    worker.db[BREAKDOWNS].insert_one({"_id": f"{site}|{last}|page|stale", "site_id": site, "day": last,
                                      "dimension": "page", "value": "/stale", "pageviews": 99})  # fmt: skip
    worker.db[DAILY].insert_one({"_id": f"{site}|{last}", "site_id": site, "day": last, "pageviews": 1})

    task_id = worker.send(first, last, [site], retries=len(faults), retry_delay_s=1)
    unfinished = []  # per fault: True if the killed attempt had not finished the second day
    try:
        for attempt, fault in enumerate(faults, start=1):
            before = {d: computed_at(worker.db, site, d) for d in days}
            # The job's processes are found before the first day lands, so the kill follows it
            # within milliseconds, well inside the second day's write (seconds: the long tail).
            early = wait_spark_pids(worker.cfg.mongo_db)
            wait_mid_write(worker, site, days, before)
            pids = early | spark_job_pids(worker.cfg.mongo_db)  # with workers started since
            if fault == "spark":
                sigkill(early)
                sigkill(pids - early)
                wait_gone(pids)
            else:
                # The job is held still while Mongo is killed: supervisord takes its time to send
                # the signal on a busy machine, and once the job finished the second day meanwhile
                # (a CI run: the attempt completed instead of failing).
                sigkill(pids, signal.SIGSTOP)
                mongo.kill()
                sigkill(pids, signal.SIGCONT)
                # Down until the job has failed on it, then back (the worker records the attempt).
                wait_gone(pids, timeout=120)
                mongo.start()
            unfinished.append(computed_at(worker.db, site, last) == before[last])
            runs = wait_attempts(worker, task_id, attempt)
            assert [r["status"] for r in runs] == ["retrying"] * attempt, (fault, runs)
    finally:
        if mongo.pid() is None or not mongo.healthy():
            mongo.start()  # other tests share it

    runs = worker.wait(task_id)
    assert [(r["status"], r["detail"]["attempt"]) for r in runs] == [
        *[("retrying", n) for n in range(1, len(faults) + 1)],
        ("complete", len(faults) + 1),
    ], runs
    after = documents(worker.db, site, days)
    truth = exact(events, TZ, set(days))
    got = {d: worker.db[DAILY].find_one({"_id": f"{site}|{d}"})["pageviews"] for d in days}
    log = worker.log_once(f"Task {ROLLUP}[{task_id}] succeeded")
    results.record(
        Row(
            scenario="batch failure",
            load=f"{len(events)} events ({len({e.event_id for e in events})} distinct), 2 days, Spark local[2]",
            faults=", ".join(f"{f} SIGKILL mid-write" for f in faults),
            sent=len(events),
            lost=sum(max(0, truth[d]["pageviews"] - got[d]) for d in days),
            duplicated=sum(max(0, got[d] - truth[d]["pageviews"]) for d in days),
            notes=(
                f"{len(runs)} Celery attempts for {len(faults)} failures; kills before day 2 finished: "
                f"{sum(unfinished)}/{len(faults)}; re-run documents identical: {after == reference}; "
                f"a day's write took {day_write_s:.2f} s in the clean run"
            ),
        ),
        started,
    )
    assert after == reference, "the completing retry did not leave the clean run's documents"
    assert_matches_truth(worker.cfg, site, events, days)
    # Every kill hit the second day's write (the long tail makes that write outlast the kill).
    assert all(unfinished), f"a kill landed after the second day was complete: {unfinished} ({day_write_s:.2f} s)"
    # Exactly one retry per failure: one delivery per attempt, one retry message per failure.
    assert log.count(f"Task {ROLLUP}[{task_id}] received") == len(faults) + 1
    assert log.count(f"Task {ROLLUP}[{task_id}] retry: Retry in") == len(faults)
    time.sleep(3)  # longer than the last retry delay would have been: nothing runs again
    assert len(worker.runs(task_id)) == len(faults) + 1
    assert mongo.healthy()
