"""The archive lock: one job at a time reads or rewrites the raw archive.

Compaction deletes the files it merged, which a running Spark job may already have listed,
and two rollups of one day would race to replace its documents. So every rollup (nightly,
backfill, ``--legacy-hours``) and every compaction, whether a Celery task or a
``manage.py`` command, holds this lock for its whole run. It is a
:class:`archive.lease.Lease` (renewed while held, so a job may run for hours; lapsing
within :data:`TTL_S` of a ``kill -9``) whose value names the holder and since when, so a
waiter can say whom it waits for. Tasks try once and reschedule; commands wait up to a
timeout with a progress line, then refuse (:class:`ArchiveLockBusy`).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType

import redis

from archive.lease import Lease

# The key the Celery tasks took before this module existed: old and new workers exclude each other.
KEY = "ff:lock:rollup"
TTL_S = 120  # a dead holder's lock lapses this soon; a live one renews it every TTL_S / 3
REPEAT_WAITING_S = 60  # a waiter says again whom it waits for this often
COMMAND_WAIT_S = 900.0  # how long an operator's command waits for the lock, unless told (--lock-timeout)


def _stamp(at: dt.datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"


@dataclass(frozen=True, slots=True)
class Holder:
    """Who holds the lock (``what`` plus process and host) and since when (UTC; None if unknown)."""

    name: str
    since: dt.datetime | None

    def __str__(self) -> str:
        return f"{self.name} since {_stamp(self.since)}" if self.since else self.name

    @classmethod
    def parse(cls, value: bytes) -> Holder:
        try:
            data = json.loads(value)
            return cls(str(data["holder"]), dt.datetime.fromisoformat(data["since"]))
        except (ValueError, KeyError, TypeError):  # a token from a version before holders were named
            return cls("a job of an older Footfall version", None)


class ArchiveLockBusy(RuntimeError):
    """Another job held the archive lock for as long as the caller would wait."""

    def __init__(self, holder: Holder | None, waited_s: float) -> None:
        self.holder, self.waited_s = holder, waited_s
        who = str(holder) if holder else "another job"
        super().__init__(
            f"the archive lock is held by {who}; gave up after waiting {waited_s:.0f} s "
            "(a rollup or compaction is running: try again when it has finished)"
        )


class ArchiveLock:
    """``lock.acquire(wait_s, say)`` … ``lock.release()``; see :func:`archive_lock` for the usual form."""

    def __init__(self, client: redis.Redis, what: str, ttl_s: float = TTL_S, key: str = KEY) -> None:
        self._client, self._key = client, key
        self._lease = Lease(client, key, ttl_s)
        self.name = f"{what} (pid {os.getpid()} on {socket.gethostname()})"
        self._say: Callable[[str], None] = lambda line: None

    def holder(self) -> Holder | None:
        """Whoever holds the lock now (None when it is free)."""
        value = self._client.get(self._key)
        return Holder.parse(value) if value is not None else None

    def acquire(self, wait_s: float = 0, say: Callable[[str], None] | None = None, poll_s: float = 1.0) -> None:
        """Take the lock, waiting up to ``wait_s`` seconds; raise :class:`ArchiveLockBusy` after.

        ``say`` gets a line when the wait starts, when the holder changes, every
        :data:`REPEAT_WAITING_S`, when the lock is taken and just before it is released."""
        self._say = say or (lambda line: None)
        started = time.monotonic()
        last: tuple[Holder | None, float] | None = None
        while True:
            now = dt.datetime.now(dt.UTC)
            token = json.dumps({"holder": self.name, "since": now.isoformat(), "id": uuid.uuid4().hex})
            if self._lease.acquire(token=token):
                waited = time.monotonic() - started
                self._say(
                    f"took the archive lock at {_stamp(now)}" + (f" after waiting {waited:.0f} s" if last else "")
                )
                return
            holder, waited = self.holder(), time.monotonic() - started
            if waited >= wait_s:
                raise ArchiveLockBusy(holder, waited)
            if last is None or holder != last[0] or waited - last[1] >= REPEAT_WAITING_S:
                self._say(
                    f"waiting for the archive lock held by {holder or 'another job'} ({waited:.0f} s of {wait_s:.0f})"
                )
                last = (holder, waited)
            time.sleep(min(poll_s, max(wait_s - waited, 0.01)))

    def release(self) -> None:
        """Give the lock up (idempotent); the line comes first, so it precedes any next holder's."""
        if self._lease.held:
            self._say(f"releasing the archive lock at {_stamp(dt.datetime.now(dt.UTC))}")
        self._lease.release()


@contextmanager
def archive_lock(
    redis_url: str, what: str, wait_s: float = 0, say: Callable[[str], None] | None = None
) -> Iterator[ArchiveLock]:
    """Hold the archive lock for the block (as ``what``), released on leaving it however it ends."""
    lock = ArchiveLock(redis.Redis.from_url(redis_url), what)
    lock.acquire(wait_s, say)
    try:
        yield lock
    finally:
        lock.release()


def _exit(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


@contextmanager
def sigterm_exits() -> Iterator[None]:
    """For commands: SIGTERM unwinds the stack like Ctrl-C does, so ``finally`` blocks stop the
    Spark job and release the lock instead of leaving both behind for :data:`TTL_S`."""
    previous = signal.signal(signal.SIGTERM, _exit)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
