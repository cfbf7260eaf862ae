"""The archive: compaction (many small files of a partition become one, each event id once)
and durable writes."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from archive.schema import partition_path, to_row
from archive.store import Archive, ArchiveRow, read_event_ids
from footfall.demo import DemoTraffic
from footfall_capture import durable


def test_compaction_merges_files_and_keeps_the_first_received_copy(tmp_path: Path) -> None:
    archive = Archive(tmp_path.as_uri())
    gen = DemoTraffic(site_id="s1", seed=4)
    ts = 1_780_000_000_000
    events = [gen.event(ts + i * 1000, received_at_ms=ts + i * 1000) for i in range(30)]
    rows = [ArchiveRow(partition_path("s1", e.ts), to_row(e, b"{}", 0, i)) for i, e in enumerate(events)]
    for chunk in range(0, 30, 3):
        archive.write(rows[chunk : chunk + 3])
    late = [
        ArchiveRow(r.partition, {**r.row, "received_at": r.row["received_at"] + 5, "kafka_offset": 99})
        for r in rows[:5]
    ]
    archive.write(late)  # the same events archived again (an uncommitted batch after a crash)
    (partition,) = archive.partitions()

    assert archive.compact(partition, min_files=8) == 11
    assert len(list((archive.root / partition).glob("part-*.parquet"))) == 1
    assert sorted(read_event_ids(archive)) == sorted(e.event_id for e in events)
    table = pq.read_table(next((archive.root / partition).glob("part-*.parquet")))
    assert 99 not in table.column("kafka_offset").to_pylist()  # the earliest received copy is kept
    assert archive.compact(partition, min_files=8) == 0  # one file: nothing to do


def test_a_write_whose_directory_fsync_fails_raises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The archiver commits offsets once ``write`` returns, so a write whose file name might
    not survive a crash must raise (a failed directory fsync used to be swallowed)."""
    gen = DemoTraffic(site_id="s1", seed=4)
    event = gen.event(1_780_000_000_000, received_at_ms=1_780_000_000_000)
    real = os.fsync

    def fsync(fd: int) -> None:
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            raise OSError(errno.EIO, "injected directory fsync failure")
        real(fd)

    monkeypatch.setattr(durable.os, "fsync", fsync)
    with pytest.raises(OSError, match="injected directory fsync failure"):
        Archive(tmp_path.as_uri()).write([ArchiveRow(partition_path("s1", event.ts), to_row(event, b"{}", 0, 0))])


def test_size_counts_the_data_files_of_the_folders_asked_and_stops_past_a_bound(tmp_path: Path) -> None:
    archive = Archive(tmp_path.as_uri())
    gen = DemoTraffic(site_id="s1", seed=4)
    day = 1_780_000_000_000 - 1_780_000_000_000 % 86_400_000 + 3_600_000  # 01:00 UTC
    for offset in (0, 86_400_000):  # one file on each of two dates
        e = gen.event(day + offset)
        archive.write([ArchiveRow(partition_path("s1", e.ts), to_row(e, b"{}", 0, 0))])
    (first, second) = archive.files()
    (archive.root / first.parent / ".tmp-part-x.parquet").write_bytes(b"x" * 10_000)  # not data
    sizes = [(archive.root / f).stat().st_size for f in (first, second)]
    folders = [str(f.parent.parent) for f in (first, second)]  # site_id=…/date=…

    assert archive.size(folders) == sum(sizes)
    assert archive.size(folders[:1]) == sizes[0]
    assert archive.size([*folders, "site_id=s1/date=1999-01-01"]) == sum(sizes)  # absent: nothing
    assert archive.size(folders, above=1) == sizes[0]  # past the bound after the first folder
