"""The arguments of the commands that make a host site's credentials (``kafka_host_user``,
``redis_host_user``): the user, ``--password-file`` and ``--remove``, in one home."""

from __future__ import annotations

import sys
from pathlib import Path

from django.core.management.base import CommandError, CommandParser


def add_host_user_arguments(parser: CommandParser, removes: str) -> None:
    """The user's name, where its password is, and ``--remove`` (which deletes ``removes``)."""
    parser.add_argument("user", help="the user's name, e.g. host-shop")
    parser.add_argument("--password-file", type=Path, help="a file holding the password ('-': standard input)")
    parser.add_argument("--remove", action="store_true", help=f"delete {removes}")


MIN_PASSWORD_CHARS = 16


def read_password_file(source: Path | None) -> str:
    """The password in ``source`` ('-': standard input), stripped; :class:`CommandError` if it
    cannot be read or is shorter than :data:`MIN_PASSWORD_CHARS`."""
    if source is None:
        raise CommandError("--password-file is required (a file, or '-' for standard input)")
    try:
        raw = sys.stdin.read() if str(source) == "-" else source.read_text()
    except OSError as exc:
        raise CommandError(f"--password-file: {exc}") from exc
    password = raw.strip()
    if len(password) < MIN_PASSWORD_CHARS:
        raise CommandError(f"the password has {len(password)} characters, at least {MIN_PASSWORD_CHARS} are needed")
    return password
