"""The archive on the S3 server: crash-safe writes, compaction, and Spark reading ``s3://``.

* the real archiver (``manage.py run_archiver``) SIGKILLed while it uploads an object, again
  and again, then run to the end: no object but whole archive files, archive ids = the
  topic's ids (the upload cut short stays an unfinished multipart upload, never an object);
* the hourly compaction on S3 (no rename: write the merged object, then delete the sources) keeps
  every event once;
* the rollup on the stack's Spark cluster reading ``s3://`` gives the same documents as
  ``local[2]`` reading a local archive of the same events.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import io
import signal
import subprocess
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from zoneinfo import ZoneInfo

import pyarrow as pa
import pyarrow.fs as pafs
import pymongo
import pytest
from django.test import Client
from pyspark.sql import SparkSession

from archive.schema import partition_path, to_row
from archive.store import Archive, ArchiveRow, _dedupe, read_event_ids
from footfall.config import Config
from footfall.demo import DemoTraffic
from footfall.models import ApiKey, Site
from footfall_capture.events import Event, encode
from historical import tasks
from historical.rollups import run_rollup
from historical.store import DAILY, documents
from query import raw_export
from realtime.health import consumer_lag
from tests.integration.batch.test_rollup_e2e import GOALS, TZ, assert_matches_truth, two_days_of_traffic
from tests.integration.kafka_tail import produce
from tests.reliability.faults import fresh_topic, start_archiver, topic_event_ids, wait_while_progressing
from tests.spark_session import roll_up_in_session

EVENTS = 12_000
KILLS = 3


def rows_of(site: str, events: list[Event]) -> list[ArchiveRow]:
    return [ArchiveRow(partition_path(site, e.ts), to_row(e, encode(e), 0, i)) for i, e in enumerate(events)]


def kill_mid_upload(proc: subprocess.Popen, uploads: Callable[[], set[str]], timeout: float = 60.0) -> bool:
    """SIGKILL ``proc`` as soon as a new upload is in flight; True if that upload was still
    unfinished after the kill (the kill landed mid-object)."""
    before = uploads()
    deadline = time.monotonic() + timeout
    started: set[str] = set()
    while time.monotonic() < deadline and proc.poll() is None and not started:
        started = uploads() - before
        time.sleep(0.002)
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    return bool(started & uploads())


def test_archiver_killed_mid_write_on_s3_leaves_no_partial_object_and_loses_nothing(
    s3_cfg: Config, uploads_in_flight: Callable[[], set[str]]
) -> None:
    site = f"s3k-{uuid.uuid4().hex[:8]}"
    day = dt.datetime.now(dt.UTC).date() - dt.timedelta(days=1)
    day_start = int(dt.datetime.combine(day, dt.time(), dt.UTC).timestamp() * 1000)
    gen = DemoTraffic(site_id=site, visitors=2000, seed=12)
    events = [gen.event(day_start + int(i * 86_400_000 / EVENTS)) for i in range(EVENTS)]
    archive = Archive.from_config(s3_cfg)
    with fresh_topic(s3_cfg) as topic:
        produce(s3_cfg, topic, events)
        mid_object = sum(kill_mid_upload(start_archiver(s3_cfg, topic, 1000), uploads_in_flight) for _ in range(KILLS))
        final = start_archiver(s3_cfg, topic, 1000)
        try:
            wait_while_progressing(lambda: sum(consumer_lag(s3_cfg, f"arch-{topic}", topic).values()), 120, "lag")
        finally:
            final.send_signal(signal.SIGTERM)
            final.wait(60)
        on_topic = set(topic_event_ids(s3_cfg, topic))

    # Every object under the archive's prefix is a whole Parquet file of the archive.
    listing = archive.fs.get_file_info(pafs.FileSelector(archive.root_path, recursive=True))
    objects = [info for info in listing if info.type == pafs.FileType.File]
    assert len(objects) == len(archive.files()), "an object that is not a data file"
    tables = [archive.read(path) for path in archive.files()]
    archived = Counter(pa.concat_tables(tables).column("event_id").to_pylist())
    assert mid_object >= 1, "no kill landed while an object was being uploaded"
    assert on_topic == {e.event_id for e in events}
    assert set(archived) == on_topic
    # Rows of batches killed before their offsets were committed may be archived twice; the dedup leaves each once.
    assert sorted(_dedupe(pa.concat_tables(tables)).column("event_id").to_pylist()) == sorted(on_topic)


def test_hourly_compaction_on_s3_keeps_every_event_once(s3_cfg: Config, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Celery task's own path (listing partitions, merging, deleting) on an S3 archive."""
    monkeypatch.setattr(tasks, "footfall_config", lambda: s3_cfg)
    archive = Archive.from_config(s3_cfg)
    gen = DemoTraffic(site_id="s3c", seed=7)
    ts = 1_780_000_000_000
    rows = rows_of("s3c", [gen.event(ts + i * 1000, received_at_ms=ts + i * 1000) for i in range(40)])
    for chunk in range(0, 40, 4):
        archive.write(rows[chunk : chunk + 4])
    archive.write(rows[:6])  # an uncommitted batch archived again after a crash
    (partition,) = archive.partitions()

    assert len(archive.files(partition)) == 11
    assert tasks.compact_archive(min_files=8)["files_merged"] == 11
    assert len(archive.files(partition)) == 1
    assert sorted(read_event_ids(archive)) == sorted({r.row["event_id"] for r in rows})
    assert archive.compact(partition, min_files=8) == 0  # one file: nothing to do


@pytest.fixture
def two_databases(cfg: Config) -> list[str]:
    names = [f"test_{uuid.uuid4().hex[:10]}" for _ in range(2)]
    yield names
    client: pymongo.MongoClient = pymongo.MongoClient(cfg.mongo_url)
    for name in names:
        client.drop_database(name)
    client.close()


@pytest.mark.django_db
def test_rollup_reads_the_same_figures_from_s3_as_from_a_local_archive(
    s3_cfg: Config,
    tmp_path: Path,
    two_databases: list[str],
    spark: SparkSession,
    spark_cluster: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    site = f"s3r-{uuid.uuid4().hex[:8]}"
    Site.objects.create(site_id=site, name="S3", domains=["demo.footfall.local"], timezone=TZ)
    events, days = two_days_of_traffic(site)
    local = dataclasses.replace(s3_cfg, archive_url=(tmp_path / "archive").as_uri(), mongo_db=two_databases[0])
    on_s3 = dataclasses.replace(s3_cfg, mongo_db=two_databases[1])
    for target in (local, on_s3):
        Archive.from_config(target).write(rows_of(site, events))

    first, last = dt.date.fromisoformat(days[0]), dt.date.fromisoformat(days[1])
    goals = {site: GOALS}  # passed in, as the nightly task passes the site's models
    roll_up_in_session(spark, local, first, last, [site], goals=goals)  # the reference, in this process
    # The S3 archive is read by the stack's standalone cluster: executors in other JVMs get the
    # endpoint and keys from the job's properties file, the S3A jars from the shared classpath.
    result = run_rollup(on_s3, first, last, [site], master=spark_cluster, goals=goals)
    assert sorted(result.days) == [(site, d) for d in days]

    client: pymongo.MongoClient = pymongo.MongoClient(s3_cfg.mongo_url)
    try:
        from_local = documents(client[local.mongo_db], site, days)
        from_s3 = documents(client[on_s3.mongo_db], site, days)
    finally:
        client.close()
    assert from_s3 == from_local
    assert_matches_truth(on_s3, site, events, days, GOALS)

    # The export of the S3 archive (the API, a key with the export scope) is what the rollup counted.
    _, key = ApiKey.issue(Site.objects.get(site_id=site), "leaving", ["export"])
    monkeypatch.setattr(raw_export, "footfall_config", lambda: on_s3)
    end = str(last + dt.timedelta(days=1))
    answer = Client().get(f"/api/v1/sites/{site}/export", {"from": days[0], "to": end, "format": "csv"},
                          HTTP_AUTHORIZATION=f"Bearer {key}")  # fmt: skip
    assert answer.status_code == 200
    assert answer["Content-Disposition"] == f'attachment; filename="footfall-{site}-{days[0]}-{end}.csv"'
    rows = list(csv.DictReader(io.StringIO(b"".join(answer.streaming_content).decode())))
    assert len(rows) == len({e.event_id for e in events})  # every event once: the 150 duplicates left out
    counted = Counter(
        dt.datetime.fromtimestamp(int(r["ts"]) / 1000, ZoneInfo(TZ)).date().isoformat()
        for r in rows if r["type"] == "pageview" and r["is_bot"] != "true"
    )  # fmt: skip
    assert counted == {doc["day"]: doc["pageviews"] for doc in from_s3[DAILY]}
