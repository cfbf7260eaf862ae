"""Durable file-system steps shared by the writers that promise durability (the collector's
spool, the raw archive).

Contract of :func:`fsync_directory`: after it returns, the names created, renamed or removed
in ``directory`` survive a crash. It raises the ``OSError`` of a failed fsync (the caller
must not report the write as durable), except in two cases where there is nothing to make
durable or nothing more to do: the directory no longer exists, or its file system cannot
fsync a directory (``EINVAL``, as some network and FUSE file systems answer).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path


def fsync_directory(directory: Path) -> None:
    """fsync ``directory`` itself, so the entries changed in it are on disk."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise
    finally:
        os.close(fd)
