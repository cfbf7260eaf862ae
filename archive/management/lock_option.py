"""The archive lock as operators' commands take it: one ``--lock-timeout`` option, and a
block that waits for the lock, exits cleanly on SIGTERM or Ctrl-C, and turns a lock held too
long into a :class:`~django.core.management.base.CommandError` (exit status 1)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from django.core.management.base import CommandError, CommandParser

from archive.lock import COMMAND_WAIT_S, ArchiveLockBusy, archive_lock, sigterm_exits


def add_lock_timeout(parser: CommandParser, waits_for: str) -> None:
    """Add ``--lock-timeout SECONDS``: how long the command waits for ``waits_for`` to finish."""
    parser.add_argument(
        "--lock-timeout", type=float, default=COMMAND_WAIT_S, metavar="SECONDS",
        help=f"wait up to SECONDS for {waits_for} to finish (default {COMMAND_WAIT_S:.0f})",
    )  # fmt: skip


@contextmanager
def holding_archive_lock(redis_url: str, what: str, timeout_s: float, say: Callable[[str], None]) -> Iterator[None]:
    """Hold the archive lock (as ``what``) for the block; SIGTERM and Ctrl-C release it on the way out."""
    try:
        with sigterm_exits(), archive_lock(redis_url, what, timeout_s, say=say):
            yield
    except ArchiveLockBusy as busy:
        raise CommandError(f"{busy}; to wait longer, give --lock-timeout SECONDS") from None
