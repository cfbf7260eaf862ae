"""The ``--password-file`` of the commands that make credentials: one home for reading it."""

from __future__ import annotations

import sys
from pathlib import Path

from django.core.management.base import CommandError


def read_password_file(source: Path | None) -> str:
    """The password in ``source`` ('-': standard input), stripped; :class:`CommandError` if unreadable."""
    if source is None:
        raise CommandError("--password-file is required (a file, or '-' for standard input)")
    try:
        raw = sys.stdin.read() if str(source) == "-" else source.read_text()
    except OSError as exc:
        raise CommandError(f"--password-file: {exc}") from exc
    return raw.strip()
