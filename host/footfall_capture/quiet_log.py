"""At most one log line per kind of failure a minute: a guest in someone's site must not flood its logs.

A store that is down makes the same complaint every few seconds: librdkafka on each attempt
to reconnect (about 13 lines a second with one broker refusing connections), the sink and
the salts on each retry. The first line of a kind is logged; the others within the minute
are counted, and the next line of that kind logged says how many were left out.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable

QUIET_INTERVAL_S = 60.0


def template_kind(record: logging.LogRecord) -> Hashable:
    """A record's kind: its logger, level and message template (not the values filled in)."""
    return record.name, record.levelno, str(record.msg)


def librdkafka_kind(record: logging.LogRecord) -> Hashable:
    """librdkafka logs every line as ``"%s [%s] %s" % (facility, client, text)``: its kind is
    the facility (``FAIL``, ``ERROR``, ``BROKERFAIL``, …)."""
    if isinstance(record.args, tuple) and record.args:
        return record.name, record.levelno, str(record.args[0])
    return template_kind(record)


class OncePerKind(logging.Filter):
    """Pass the first record of each kind, then none of that kind for ``interval_s`` seconds;
    the first one passed after that carries the count of those held back."""

    def __init__(
        self,
        kind: Callable[[logging.LogRecord], Hashable] = template_kind,
        interval_s: float = QUIET_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self._kind = kind
        self._interval_s = interval_s
        self._clock = clock
        self._lock = threading.Lock()  # records arrive from request threads and background threads
        self.seen: dict[Hashable, tuple[float, int]] = {}  # kind -> (when last passed, held back since)

    def filter(self, record: logging.LogRecord) -> bool:
        key = self._kind(record)
        now = self._clock()
        with self._lock:
            passed_at, held = self.seen.get(key, (None, 0))
            if passed_at is not None and now - passed_at < self._interval_s:
                self.seen[key] = (passed_at, held + 1)
                return False
            self.seen[key] = (now, 0)
        if held:
            record.msg = f"{record.msg} [{held} more like this since the last one logged]"
        return True


def quiet_logger(name: str, kind: Callable[[logging.LogRecord], Hashable] = template_kind) -> logging.Logger:
    """The logger ``name`` with a :class:`OncePerKind` filter (added once, however often asked)."""
    logger = logging.getLogger(name)
    if not any(isinstance(f, OncePerKind) for f in logger.filters):
        logger.addFilter(OncePerKind(kind))
    return logger
