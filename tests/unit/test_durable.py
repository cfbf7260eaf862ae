"""footfall_capture.durable.fsync_directory: a failed directory fsync is an error, except where there
is nothing to make durable or nothing more to do."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from footfall_capture import durable
from footfall_capture.durable import fsync_directory


def failing_fsync(code: int) -> object:
    def fsync(_fd: int) -> None:
        raise OSError(code, os.strerror(code))

    return fsync


def test_the_directory_itself_is_fsynced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(durable.os, "fsync", lambda fd: (synced.append(os.fstat(fd).st_ino), real(fd)))
    fsync_directory(tmp_path)
    assert synced == [tmp_path.stat().st_ino]


def test_a_failed_fsync_raises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(durable.os, "fsync", failing_fsync(errno.EIO))
    with pytest.raises(OSError, match=os.strerror(errno.EIO)) as raised:
        fsync_directory(tmp_path)
    assert raised.value.errno == errno.EIO


def test_a_file_system_that_cannot_fsync_a_directory_is_not_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(durable.os, "fsync", failing_fsync(errno.EINVAL))
    fsync_directory(tmp_path)


def test_a_directory_that_is_gone_has_nothing_to_sync(tmp_path: Path) -> None:
    fsync_directory(tmp_path / "removed")
