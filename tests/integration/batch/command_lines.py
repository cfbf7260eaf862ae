"""What every local user can read of running processes: their command lines (``ps``, /proc)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def command_lines() -> list[str]:
    """Every process's argv, joined by spaces."""
    lines = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            lines.append(cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:  # the process ended meanwhile
            continue
    return lines


@contextmanager
def watched_command_lines(containing: str, every_s: float = 0.2) -> Iterator[list[str]]:
    """Collect, while the block runs, the command lines of processes that contain ``containing``."""
    seen: list[str] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            seen.extend(line for line in command_lines() if containing in line)
            done.wait(every_s)

    watcher = threading.Thread(target=watch, name="command-lines", daemon=True)
    watcher.start()
    try:
        yield seen
    finally:
        done.set()
        watcher.join(10)
