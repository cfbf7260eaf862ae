"""A durable local spool for events Kafka could not take: append-only, fsync'd, size-bounded.

Invariant 1 (no silent loss) rests on this file: the collector answers 2xx for an event
only once it is in the producer's queue or here, on disk, fsync'd.

Layout: a directory of segment files ``<unix-ms>-<pid>-<n>.spool``. Each record is framed
as ``length (4 bytes, big-endian) | crc32 (4 bytes) | payload``. A writer holds an
exclusive ``flock`` on its open segment, so replayers (any process) skip segments still
being written and take over those of a process that died. A record cut short by a crash
was never fsync'd, hence never acknowledged: the reader stops at the first torn or corrupt
frame of a segment and reports it.

Appends are group-committed: each caller returns only once an fsync that began after its
record was written has completed, but one fsync serves every record written before it
started. During a Kafka outage every accepted beacon lands here, and one fsync per record
under the writer's lock capped a process at one event per fsync latency; with group commit
the threads that arrive while an fsync runs share the next one.

Replay (:meth:`Spool.replay`) hands each record to a callback that must make it durable
elsewhere (produce to Kafka and wait for delivery) and deletes a segment only when every
record in it was delivered. A crash mid-replay therefore re-sends records, never loses
them; downstream deduplicates by ``event_id``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from footfall_capture.durable import fsync_directory
from footfall_capture.quiet_log import quiet_logger

log = quiet_logger(__name__)

_HEADER = struct.Struct(">II")
SEGMENT_BYTES = 16 * 1024 * 1024  # rotate so replay can free space segment by segment


PRIVATE_DIRECTORY = 0o700
PRIVATE_FILE = 0o600


def make_private_directory(directory: Path) -> None:
    """Create ``directory`` (and its parents) if missing, and leave it 0700: the spool's own
    folder is no one else's to list, whatever the umask or an earlier version made it."""
    directory.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIRECTORY)
    if directory.stat().st_mode & 0o777 != PRIVATE_DIRECTORY:
        directory.chmod(PRIVATE_DIRECTORY)


class SpoolFull(RuntimeError):
    """The spool reached its size bound; the caller must refuse the event (503)."""


@dataclass(frozen=True)
class ReplayResult:
    records: int = 0
    delivered: int = 0
    segments_done: int = 0
    corrupt_segments: int = 0


class Spool:
    """Append-only durable queue of raw event bytes in ``directory``, at most ``max_bytes``.

    Thread-safe within a process; several processes may share the directory.
    """

    def __init__(self, directory: Path, max_bytes: int) -> None:
        self.directory = directory
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._file: BinaryIO | None = None
        self._path: Path | None = None
        self._pid = 0
        self._seq = 0
        self._size_cache: tuple[float, int] = (0.0, 0)
        # Group commit (see append): records are numbered as they are written. Every record
        # numbered up to _synced is durable, except those in a _failed range (lo, hi]: they
        # were not synced yet when an fsync of their segment failed, and their appends raise.
        # Records written and not yet synced are all in the open segment: closing it syncs
        # them first.
        self._synced_cond = threading.Condition(self._lock)
        self._reset_numbering()

    def _reset_numbering(self) -> None:
        """No record written yet (a new spool, or a forked child: the parent's are its own)."""
        self._written = self._synced = 0
        self._failed: list[tuple[int, int]] = []  # grows by one per failed fsync: rare
        self._syncing = False

    # --- writing -------------------------------------------------------------------
    def append(self, payload: bytes) -> None:
        """Durably append one record: return only after an fsync that covers it; raise
        :class:`SpoolFull` at the size bound, ``OSError`` if the record may not be durable."""
        frame = _HEADER.pack(len(payload), zlib.crc32(payload)) + payload
        with self._lock:
            if self.size_bytes() + len(frame) > self.max_bytes:
                raise SpoolFull(f"spool at {self.directory} holds {self.max_bytes} bytes, its configured bound")
            handle = self._segment()
            handle.write(frame)
            handle.flush()
            self._written += 1
            ticket = self._written
            self._size_cache = (self._size_cache[0], self._size_cache[1] + len(frame))
            if handle.tell() >= SEGMENT_BYTES:
                self._close_segment()  # syncs this record and every earlier one first
            while True:
                # Failures first: a later fsync of a new segment moves _synced past them.
                if any(lo < ticket <= hi for lo, hi in self._failed):
                    raise OSError(f"spool at {self.directory}: fsync failed; the record may not be durable")
                if self._synced >= ticket:
                    return
                if not self._syncing:
                    self._sync_open_segment()  # this thread syncs for everyone written so far
                else:
                    self._synced_cond.wait()  # the running fsync may not cover this record: recheck

    def _sync_open_segment(self) -> None:
        """Fsync the open segment without holding the lock (called with it held), so other
        threads keep writing meanwhile; their records wait for the next fsync. The descriptor
        is duplicated because the segment may be rotated or closed while the fsync runs."""
        assert self._file is not None  # unsynced records are always in the open segment
        start, target, path, fd = self._synced, self._written, self._path, os.dup(self._file.fileno())
        self._syncing = True
        self._lock.release()
        error: OSError | None = None
        try:
            os.fsync(fd)
        except OSError as exc:
            error = exc
        finally:
            with contextlib.suppress(OSError):
                os.close(fd)
            self._lock.acquire()
            self._syncing = False
            # Whatever the fsync did, a waiter takes over. The waiters recheck only once this
            # thread releases the lock, after the state below is set: one notify is enough.
            self._synced_cond.notify_all()
        if error is None:
            self._synced = max(self._synced, target)
            return
        log.error("spool fsync failed for %s: %s", path, error)
        if self._path == path:
            # After a failed fsync the kernel may have dropped the dirty pages, and a later
            # fsync can report success without them: every record of this segment not yet
            # synced is failed, and writing goes on in a new segment.
            self._fail_unsynced()
            self._close_segment(sync=False)
        else:  # the segment was rotated meanwhile; the records written since are in a new one
            self._failed.append((start, target))

    def _fail_unsynced(self) -> None:
        """Mark every record written and not synced yet as failed: their appends raise."""
        self._failed.append((self._synced, self._written))

    def _segment(self) -> BinaryIO:
        if self._file is not None and self._pid == os.getpid():
            return self._file
        # After a fork the inherited handle (and its lock) belong to the parent, and so do
        # the records it numbered.
        if self._pid != os.getpid():
            self._reset_numbering()
        self._file, self._pid = None, os.getpid()
        make_private_directory(self.directory)
        self._seq += 1
        path = self.directory / f"{int(time.time() * 1000):013d}-{self._pid}-{self._seq}.spool"
        # Spooled events are visitors' page views: readable by this account only (0600), not
        # by the umask's usual 0644.
        handle = os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, PRIVATE_FILE), "ab")
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        fsync_directory(self.directory)  # the new file's name must survive a crash too
        self._file, self._path = handle, path
        return handle

    def _close_segment(self, sync: bool = True) -> None:
        """Close the open segment (called with the lock held), first syncing the records
        written to it and not synced yet: a closed segment holds only durable or failed ones."""
        if self._file is not None and self._pid == os.getpid():
            try:
                if sync and self._synced < self._written:
                    try:
                        os.fsync(self._file.fileno())
                    except OSError:
                        self._fail_unsynced()
                        raise
                    self._synced = self._written
            finally:
                self._file.close()  # releases the flock: the segment becomes replayable
                self._synced_cond.notify_all()
        self._file = self._path = None

    def close(self) -> None:
        """Close the open segment so it can be replayed (e.g. at exit or before replay)."""
        with self._lock:
            self._close_segment()

    # --- reading -------------------------------------------------------------------
    def size_bytes(self) -> int:
        """Bytes held on disk by all segments (re-scanned at most once a second)."""
        checked_at, size = self._size_cache
        if time.monotonic() - checked_at > 1.0:
            size = sum(p.stat().st_size for p in self._segments(include_missing=True))
            self._size_cache = (time.monotonic(), size)
        return size

    def pending(self) -> int:
        """Number of complete records on disk (all segments, open ones included)."""
        return sum(sum(1 for _ in _read_frames(p)[0]) for p in self._segments())

    def _segments(self, include_missing: bool = False) -> list[Path]:
        if not self.directory.exists():
            return []
        paths = sorted(self.directory.glob("*.spool"))
        return [p for p in paths if include_missing or p.exists()]

    def replay(self, deliver: Callable[[list[bytes]], int], batch: int = 1000) -> ReplayResult:
        """Hand spooled records to ``deliver`` in batches; delete fully delivered segments.

        ``deliver(records)`` must return how many of them are now durable elsewhere (all
        or fewer); on a shortfall replay stops and keeps the segment for the next try.
        The calling process's own open segment is closed first so it can be replayed.
        """
        self.close()
        records = delivered = done = corrupt = 0
        for path in self._segments():
            with _try_lock(path) as handle:
                if handle is None:
                    continue  # another process is writing or replaying it
                frames, torn = _read_frames(path)
                if torn:
                    corrupt += 1
                    log.warning("spool segment %s ends in a torn or corrupt record; replaying what precedes it", path)
                complete = True
                for chunk in _chunks(frames, batch):
                    records += len(chunk)
                    ok = deliver(chunk)
                    delivered += ok
                    if ok < len(chunk):
                        complete = False
                        break
                if not complete:
                    break
                path.unlink()
                done += 1
        fsync_directory(self.directory)
        self._size_cache = (0.0, 0)
        return ReplayResult(records, delivered, done, corrupt)


def _read_frames(path: Path) -> tuple[Iterator[bytes], bool]:
    """All intact records of a segment, and whether it ended in a torn/corrupt frame."""
    data = path.read_bytes()
    out: list[bytes] = []
    offset, torn = 0, False
    while offset < len(data):
        if offset + _HEADER.size > len(data):
            torn = True
            break
        length, crc = _HEADER.unpack_from(data, offset)
        start, end = offset + _HEADER.size, offset + _HEADER.size + length
        if end > len(data) or zlib.crc32(data[start:end]) != crc:
            torn = True
            break
        out.append(data[start:end])
        offset = end
    return iter(out), torn


def _chunks(items: Iterator[bytes], size: int) -> Iterator[list[bytes]]:
    chunk: list[bytes] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


@contextlib.contextmanager
def _try_lock(path: Path) -> Iterator[BinaryIO | None]:
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        yield None
        return
    try:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield None
            return
        yield handle
    finally:
        handle.close()
