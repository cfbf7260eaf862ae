"""The durable spool: what is appended survives, replays exactly, and is bounded."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from collector.spool import Spool, SpoolFull


def test_appended_records_replay_in_order_and_are_removed(tmp_path: Path) -> None:
    spool = Spool(tmp_path, 1 << 20)
    records = [f"event-{i}".encode() for i in range(50)]
    for r in records:
        spool.append(r)
    assert spool.pending() == 50
    seen: list[bytes] = []
    result = spool.replay(lambda batch: seen.extend(batch) or len(batch), batch=7)
    assert seen == records
    assert (result.records, result.delivered, result.segments_done) == (50, 50, 1)
    assert spool.pending() == 0
    assert list(tmp_path.glob("*.spool")) == []


def test_failed_delivery_keeps_the_segment(tmp_path: Path) -> None:
    """A shortfall stops replay and keeps everything for the next try (re-sent, never lost)."""
    spool = Spool(tmp_path, 1 << 20)
    for i in range(10):
        spool.append(str(i).encode())
    result = spool.replay(lambda batch: len(batch) - 1, batch=4)
    assert result.segments_done == 0
    assert spool.pending() == 10
    again: list[bytes] = []
    spool.replay(lambda batch: again.extend(batch) or len(batch))
    assert again == [str(i).encode() for i in range(10)]


def test_size_bound_refuses_with_a_clear_error(tmp_path: Path) -> None:
    spool = Spool(tmp_path, 1 << 16)
    for _ in range(63):  # 63 frames of 1,032 bytes fit in 64 KiB
        spool.append(b"x" * 1024)
    with pytest.raises(SpoolFull, match="bound"):
        spool.append(b"x" * 1024)
    size = sum(p.stat().st_size for p in tmp_path.glob("*.spool"))
    assert size <= 1 << 16


def test_torn_tail_is_skipped_and_reported(tmp_path: Path) -> None:
    """A crash mid-append leaves a torn frame: the intact records before it still replay."""
    spool = Spool(tmp_path, 1 << 20)
    spool.append(b"first")
    spool.append(b"second")
    spool.close()
    segment = next(tmp_path.glob("*.spool"))
    with segment.open("ab") as f:
        f.write(struct.pack(">II", 100, 0) + b"partial")
    seen: list[bytes] = []
    result = spool.replay(lambda batch: seen.extend(batch) or len(batch))
    assert seen == [b"first", b"second"]
    assert result.corrupt_segments == 1


def test_corrupt_record_stops_at_the_checksum(tmp_path: Path) -> None:
    spool = Spool(tmp_path, 1 << 20)
    spool.append(b"good")
    spool.append(b"evil")
    spool.close()
    segment = next(tmp_path.glob("*.spool"))
    data = bytearray(segment.read_bytes())
    data[-1] ^= 0xFF
    segment.write_bytes(bytes(data))
    seen: list[bytes] = []
    spool.replay(lambda batch: seen.extend(batch) or len(batch))
    assert seen == [b"good"]


def test_segment_of_a_live_writer_is_not_replayed_by_another_process(tmp_path: Path) -> None:
    """A writer's open segment is locked; another process's replay skips it until the writer
    is gone, then takes it over (records of a dead process are not stranded)."""
    code = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from collector.spool import Spool\n"
        "s = Spool(Path(sys.argv[1]), 1 << 20)\n"
        "s.append(b'from-child')\n"
        "print('ready', flush=True)\n"
        "sys.stdin.readline()\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=Path(__file__).resolve().parents[3],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])},
    )
    assert child.stdout is not None
    assert child.stdin is not None
    assert child.stdout.readline().strip() == b"ready"
    spool = Spool(tmp_path, 1 << 20)
    seen: list[bytes] = []
    spool.replay(lambda batch: seen.extend(batch) or len(batch))
    assert seen == []  # locked by the live writer
    child.stdin.write(b"\n")
    child.stdin.flush()
    child.wait(timeout=10)
    spool.replay(lambda batch: seen.extend(batch) or len(batch))
    assert seen == [b"from-child"]
