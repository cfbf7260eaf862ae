"""The raw export on a real (local) archive: the events of one site and range, one copy each,
the very copy the rollup's dedupe keeps, oldest first, in Parquet, CSV and JSON lines."""

from __future__ import annotations

import csv
import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from archive.export import EXPORT_SCHEMA, encode, hours
from archive.schema import partition_path, to_row
from archive.store import Archive, ArchiveRow
from footfall.demo import DemoTraffic
from footfall_capture.events import encode as encode_event

DAY = 1_780_012_800_000  # 2026-05-29 00:00 UTC
HOUR = 3_600_000


@pytest.fixture
def archive(tmp_path) -> Archive:
    """Site s1: 60 events over 30 hours from DAY - 3 h, each archived once, the first 20 twice
    more (a later copy, and one received earlier from another partition: the one kept); s2 the same times."""
    archive = Archive(tmp_path.as_uri())
    for site in ("s1", "s2"):
        gen = DemoTraffic(site_id=site, seed=7)
        events = [gen.event(DAY - 3 * HOUR + i * 30 * 60_000, received_at_ms=DAY + i) for i in range(60)]
        rows = [ArchiveRow(partition_path(site, e.ts), to_row(e, encode_event(e), 0, i)) for i, e in enumerate(events)]
        archive.write(rows)
        archive.write([ArchiveRow(r.partition, {**r.row, "received_at": r.row["received_at"] + 9, "kafka_offset": 500})
                       for r in rows[:20]])  # fmt: skip
        archive.write([ArchiveRow(r.partition, {**r.row, "received_at": r.row["received_at"] - 1, "kafka_partition": 3})
                       for r in rows[:20]])  # fmt: skip
    return archive


def exported(archive: Archive, start: int, end: int) -> pa.Table:
    return pa.concat_tables(list(hours(archive, "s1", start, end)))


def test_one_copy_per_event_the_first_received_in_time_order(archive: Archive) -> None:
    """The copy kept is the rollup's (spark_jobs.transforms.dedupe): first received, then the lowest
    Kafka partition and offset; tests/integration/archive_s3 checks an export against a rollup's counts."""
    start, end = DAY, DAY + 24 * HOUR  # one UTC day of the 30 hours
    table = exported(archive, start, end)
    ts = table.column("ts").to_pylist()
    assert ts == sorted(ts)
    assert min(ts) >= start
    assert max(ts) < end
    assert len(table) == len(set(table.column("event_id").to_pylist())) == 48  # 3 h before, 3 h after: left out
    kept = {row["event_id"]: (row["received_at"], row["kafka_partition"]) for row in table.to_pylist()}
    early = [(received, partition) for received, partition in kept.values() if partition == 3]
    assert len(early) == 20 - 6  # every re-archived copy received earlier won, but for the 6 hours before DAY
    assert 500 not in table.column("kafka_offset").to_pylist()  # the later copies never


def test_the_three_formats_carry_the_same_events(archive: Archive) -> None:
    start, end = DAY - 3 * HOUR, DAY + 27 * HOUR
    table = exported(archive, start, end)
    ids = table.column("event_id").to_pylist()
    assert len(ids) == 60

    parquet = pq.read_table(pa.BufferReader(b"".join(encode(hours(archive, "s1", start, end), "s1", "parquet"))))
    assert parquet.schema.equals(EXPORT_SCHEMA)
    assert parquet.column("event_id").to_pylist() == ids
    assert set(parquet.column("site_id").to_pylist()) == {"s1"}
    assert "raw" not in parquet.column_names  # and no Kafka provenance: events, not log records

    rows = list(csv.DictReader(io.StringIO(b"".join(encode(hours(archive, "s1", start, end), "s1", "csv")).decode())))
    assert [r["event_id"] for r in rows] == ids
    assert list(rows[0]) == EXPORT_SCHEMA.names
    assert rows[0]["country"] == table.column("country")[0].as_py()

    lines = b"".join(encode(hours(archive, "s1", start, end), "s1", "jsonl")).decode().splitlines()
    events = [json.loads(line) for line in lines]
    assert [e["event_id"] for e in events] == ids  # each event exactly as it was on the log
    assert {e["schema"] for e in events} == {1}


def test_an_empty_range_or_unknown_format(archive: Archive) -> None:
    assert list(hours(archive, "s1", DAY + 40 * HOUR, DAY + 41 * HOUR)) == []
    empty = pq.read_table(pa.BufferReader(b"".join(encode(iter([]), "s1", "parquet"))))
    assert (empty.num_rows, empty.schema.equals(EXPORT_SCHEMA)) == (0, True)
    with pytest.raises(ValueError, match="format 'xml'"):
        next(encode(iter([]), "s1", "xml"))
