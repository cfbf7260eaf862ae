"""Stored values a reader cannot parse: skipped, counted, and logged at most once a minute
per kind.

A reader meets data it did not write: a member without the separator its dimension joins,
bytes that are not UTF-8, a counter that is not a number, a stray field or heartbeat. None of these may
turn a view into an error page, and a bad key read by every poll of every open dashboard
must not flood the log either. So each kind of unreadable value is counted, and one line a
minute per kind says how many were skipped since the last and shows one example.
Written here rather than with a logging filter: the count of what the window suppressed is
the point, and logging's filters cannot report it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)
EVERY_S = 60.0


@dataclass(slots=True)
class _Pending:
    count: int = 0
    example: str = ""
    logged_at: float | None = None


class Unreadable:
    """Counts skipped values per kind and logs each kind at most once every ``every_s``."""

    def __init__(self, every_s: float = EVERY_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.every_s = every_s
        self.clock = clock
        self._kinds: dict[str, _Pending] = {}
        self._totals: dict[str, int] = {}
        self._lock = threading.Lock()  # readers run in gthread workers and Dash callbacks at once

    def skip(self, kind: str, value: object) -> None:
        """Record that one stored ``value`` of ``kind`` (e.g. ``"refpage value"``) was skipped."""
        now = self.clock()
        with self._lock:
            pending = self._kinds.setdefault(kind, _Pending())
            pending.count += 1
            self._totals[kind] = self._totals.get(kind, 0) + 1
            if not pending.example:
                pending.example = repr(value)[:200]
            if pending.logged_at is not None and now - pending.logged_at < self.every_s:
                return
            count, example = pending.count, pending.example
            pending.count, pending.example, pending.logged_at = 0, "", now
        log.warning("skipped %d unreadable stored %s(s), e.g. %s", count, kind, example)

    def totals(self) -> dict[str, int]:
        """Values skipped per kind since this object was made."""
        with self._lock:
            return dict(self._totals)


UNREADABLE = Unreadable()
skip = UNREADABLE.skip
