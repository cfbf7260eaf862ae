"""The durable spool: what is appended survives, replays exactly, and is bounded."""

from __future__ import annotations

import errno
import os
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from footfall_capture import spool as spool_module
from footfall_capture.spool import Spool, SpoolFull


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


def test_the_spool_folder_and_its_segments_are_private(tmp_path: Path) -> None:
    """0700 and 0600 whatever the umask, and a folder an earlier version made 0755 is tightened."""
    old_umask = os.umask(0o022)
    try:
        fresh = tmp_path / "state" / "spool"
        Spool(fresh, 1 << 20).append(b"event")
        older = tmp_path / "older"
        older.mkdir(mode=0o755)
        Spool(older, 1 << 20).append(b"event")
    finally:
        os.umask(old_umask)
    for folder in (fresh, older):
        assert folder.stat().st_mode & 0o777 == 0o700
        [segment] = folder.glob("*.spool")
        assert segment.stat().st_mode & 0o777 == 0o600


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
        "from footfall_capture.spool import Spool\n"
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


class _RecordingFsync:
    """Stands in for ``os.fsync``: before syncing a segment, reads the records in it (what
    this fsync will make durable) and, once the real fsync returns, counts them durable.
    Sleeps first, like a slow disk, so appends pile up behind a running fsync."""

    def __init__(self, real: Callable[[int], None], fail_on: int = 0) -> None:
        self.real, self.fail_on = real, fail_on  # fail the fail_on-th segment fsync (1-based)
        self.lock = threading.Lock()
        self.durable: set[bytes] = set()
        self.segment_syncs = 0

    def __call__(self, fd: int) -> None:
        path = Path(os.readlink(f"/proc/self/fd/{fd}"))
        if path.suffix != ".spool":
            return self.real(fd)  # the directory's entries
        covered = list(spool_module._read_frames(path)[0])  # a frame still being written is left out
        time.sleep(0.003)
        with self.lock:
            self.segment_syncs += 1
            if self.segment_syncs == self.fail_on:
                raise OSError(errno.EIO, "injected fsync failure")
        self.real(fd)
        with self.lock:
            self.durable.update(covered)
        return None


def _append_concurrently(
    spool: Spool, fsync: _RecordingFsync, threads: int, per_thread: int
) -> tuple[list[bytes], list[bytes]]:
    """``threads`` threads append ``per_thread`` records each; returns the appends that
    returned before their record was durable, and those that raised ``OSError``."""
    acked_not_durable: list[bytes] = []
    failed: list[bytes] = []

    def writer(n: int) -> None:
        for i in range(per_thread):
            payload = f"event-{n}-{i}".encode()
            try:
                spool.append(payload)
            except OSError:
                failed.append(payload)
                continue
            with fsync.lock:
                if payload not in fsync.durable:
                    acked_not_durable.append(payload)

    pool = [threading.Thread(target=writer, args=(n,)) for n in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return acked_not_durable, failed


@pytest.mark.parametrize("segment_bytes", [16 * 1024 * 1024, 2048], ids=["one-segment", "rotating"])
def test_concurrent_appends_share_fsyncs_and_return_only_when_durable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, segment_bytes: int
) -> None:
    """Group commit: no append returns before an fsync covering its record has completed,
    yet threads arriving during an fsync share the next one (one fsync per record made a
    Kafka outage cap the collector at 1/fsync-latency events a second)."""
    fsync = _RecordingFsync(os.fsync)
    monkeypatch.setattr(spool_module.os, "fsync", fsync)
    monkeypatch.setattr(spool_module, "SEGMENT_BYTES", segment_bytes)
    spool = Spool(tmp_path, 1 << 24)
    threads, per_thread = 16, 25
    acked_not_durable, failed = _append_concurrently(spool, fsync, threads, per_thread)
    assert failed == []
    assert acked_not_durable == []
    appends = threads * per_thread
    assert fsync.segment_syncs < appends / 2
    seen: list[bytes] = []
    spool.replay(lambda batch: seen.extend(batch) or len(batch))
    assert sorted(seen) == sorted(f"event-{n}-{i}".encode() for n in range(threads) for i in range(per_thread))


def test_a_failed_fsync_fails_its_records_and_writing_goes_on_in_a_new_segment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fsync = _RecordingFsync(os.fsync, fail_on=1)
    monkeypatch.setattr(spool_module.os, "fsync", fsync)
    spool = Spool(tmp_path, 1 << 20)
    with pytest.raises(OSError, match="fsync failed"):
        spool.append(b"maybe-lost")
    spool.append(b"durable")
    assert b"durable" in fsync.durable
    assert len(list(tmp_path.glob("*.spool"))) == 2  # the failed segment is closed, not reused
    seen: list[bytes] = []
    spool.replay(lambda batch: seen.extend(batch) or len(batch))
    # The failed record is still replayed if its bytes made it: a duplicate at worst (its
    # client got an error and may retry with the same event_id), never a loss.
    assert b"durable" in seen


def test_concurrent_appends_never_return_a_record_a_failed_fsync_left_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When an fsync fails while other threads wait, every append it was to cover raises,
    even though later fsyncs (of a new segment) succeed; every append that returns is durable."""
    fsync = _RecordingFsync(os.fsync, fail_on=3)
    monkeypatch.setattr(spool_module.os, "fsync", fsync)
    spool = Spool(tmp_path, 1 << 24)
    acked_not_durable, failed = _append_concurrently(spool, fsync, 16, 25)
    assert acked_not_durable == []
    assert failed  # the third fsync failed and the records it covered were refused
    assert len(failed) < 16 * 25  # and writing went on
