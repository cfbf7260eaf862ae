"""The archiver SIGKILLed mid-file, again and again: no partial file, nothing lost.

A day of page views (every hour of yesterday, UTC) is on a fresh topic. The real archiver
(``manage.py run_archiver``) is started, SIGKILLed the moment it has a file half-written
(a hidden temporary file exists), and started again, several times; a last run finishes.
Every visible archive file then reads whole, and the day's archived event ids equal the
topic's. Rows of a batch written but not committed before a kill are archived again (at-least-
once, by design): the archive's dedup leaves each id once, which is checked and reported as
``duplicated``; the raw copies are in the notes.
"""

from __future__ import annotations

import datetime as dt
import signal
import subprocess
import time
import uuid
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from archive.schema import ARROW_SCHEMA
from archive.store import TEMP_PREFIX, Archive, _dedupe
from footfall.config import Config
from footfall.demo import DemoTraffic
from realtime.health import consumer_lag
from tests.integration.kafka_tail import produce
from tests.reliability.conftest import Results, Row, size
from tests.reliability.faults import fresh_topic, private, start_archiver, topic_event_ids, wait_while_progressing

EVENTS = size(20_000, 200_000)
KILLS = size(4, 10)


def temporary_files(archive: Archive) -> list[Path]:
    return list(archive.root.glob(f"site_id=*/date=*/hour=*/{TEMP_PREFIX}*"))


def kill_mid_file(proc: subprocess.Popen, archive: Archive, timeout: float = 30.0) -> bool:
    """SIGKILL ``proc`` as soon as it has a file half-written (or after ``timeout``); True if
    a temporary file existed at the kill."""
    before = set(temporary_files(archive))
    deadline = time.monotonic() + timeout
    mid_file = False
    while time.monotonic() < deadline and proc.poll() is None:
        if set(temporary_files(archive)) - before:
            mid_file = True
            break
        time.sleep(0.002)
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    return mid_file


def test_archiver_kill_9_mid_file(cfg: Config, tmp_path: Path, results: Results) -> None:
    started = time.monotonic()
    site = f"ak-{uuid.uuid4().hex[:8]}"
    day = dt.datetime.now(dt.UTC).date() - dt.timedelta(days=1)
    day_start = int(dt.datetime.combine(day, dt.time(), dt.UTC).timestamp() * 1000)
    gen = DemoTraffic(site_id=site, visitors=3000, seed=11)
    events = [gen.event(day_start + int(i * 86_400_000 / EVENTS)) for i in range(EVENTS)]
    with fresh_topic(cfg) as topic:
        produce(cfg, topic, events)
        pcfg = private(cfg, tmp_path, topic)
        archive = Archive(pcfg.archive_url)
        mid_file = 0
        for _ in range(KILLS):
            mid_file += kill_mid_file(start_archiver(pcfg, topic, 2000), archive)
        left_behind = len(temporary_files(archive))
        final = start_archiver(pcfg, topic, 2000)
        try:
            group = f"arch-{topic}"
            # The whole day may take minutes on a busy machine: fail only if the lag stops going down.
            wait_while_progressing(lambda: sum(consumer_lag(cfg, group, topic).values()), 120, "the archiver's lag")
        finally:
            final.send_signal(signal.SIGTERM)
            final.wait(60)
        on_topic = topic_event_ids(cfg, topic)

    files = sorted(archive.root.glob(f"site_id={site}/date={day.isoformat()}/hour=*/part-*.parquet"))
    tables, unreadable = [], []
    for path in files:
        try:
            tables.append(pq.read_table(path, schema=ARROW_SCHEMA))
        except (OSError, pa.ArrowInvalid) as exc:
            unreadable.append(f"{path.name}: {exc}")
    table = pa.concat_tables(tables)
    archived = Counter(table.column("event_id").to_pylist())
    truth = set(on_topic)
    after_dedup = _dedupe(table).column("event_id").to_pylist()
    copies = sum(n - 1 for n in archived.values() if n > 1)
    results.record(
        Row(
            scenario="archiver kill -9 mid-file",
            load=f"{len(events):,} events of one day (24 hourly partitions), batches of 2,000",
            faults=f"archiver SIGKILLed {KILLS} times ({mid_file} with a file half-written), restarted",
            sent=len(events),
            lost=len(truth - set(archived)),
            duplicated=len(after_dedup) - len(set(after_dedup)),
            notes=f"{len(files)} files, {len(unreadable)} unreadable; {left_behind} hidden temporary files left by "
            f"the kills (skipped by readers, swept after an hour); {copies} duplicate rows from uncommitted "
            f"batches, {len(after_dedup) - len(set(after_dedup))} after dedup",
        ),
        started,
    )
    assert not unreadable, unreadable
    assert truth == {e.event_id for e in events}
    assert mid_file >= 1, "no kill landed while a file was being written"
    assert set(archived) == truth, f"missing {len(truth - set(archived))}, unknown {len(set(archived) - truth)}"
    assert sorted(after_dedup) == sorted(truth)
