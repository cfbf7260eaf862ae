"""One live tail per process for every viewer of the dashboard's Live events.

The first poll starts a reader thread on the log (a :class:`~realtime.live_tail.LogTail`: no
consumer group, nothing committed); it keeps the last events it read in memory, each stamped
with when this process read it. A viewer's poll names the newest stamp it has (its cursor) and
gets the events after it that pass its filter, newest first; polls keep no state per viewer,
so a viewer may be answered by any web process. Past ``max_per_s`` events a second since the
last poll a viewer gets 1 in N and is told so. Once no viewer has polled for ``idle_s`` the
reader closes its tail and its thread ends: a process nobody watches reads nothing.

One reader per topic: the events, and the refused events (the invalid-events topic, which
only staff may see; the dashboard checks that).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from realtime.live_tail import LogTail
from realtime.tail_lines import TailFilter, TailItem, tail_item

log = logging.getLogger(__name__)
EVENTS, REFUSED = "events", "refused"
IDLE_S = 10.0  # the reader stops this long after the last poll
KEEP = 2000  # events kept per topic: what a poll may still catch up on
MOST_ROWS = 200  # rows one poll returns at most (the newest)


@dataclass(frozen=True)
class Seen:
    """A record as read: when this process read it (µs since the epoch), and what the tail keeps of it."""

    at_us: int
    item: TailItem


@dataclass(frozen=True)
class Poll:
    """A poll's answer: rows newest first, the cursor to send next, and the sampling (1 in ``one_in``)."""

    rows: list[dict[str, Any]]
    cursor_us: int
    one_in: int


class _Reader:
    """The thread reading one topic while viewers poll."""

    def __init__(self, open_tail: Callable[[], LogTail], kind: str, idle_s: float) -> None:
        self.open_tail, self.kind, self.idle_s = open_tail, kind, idle_s
        self.seen: deque[Seen] = deque(maxlen=KEEP)
        self.seen_lock = threading.Lock()
        self.last_poll = time.monotonic()
        self.thread: threading.Thread | None = None
        self.ready = threading.Event()

    @property
    def running(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def start(self) -> None:
        self.ready.clear()
        self.thread = threading.Thread(target=self._run, name=f"footfall-live-{self.kind}", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            tail = self.open_tail()
        except Exception:
            log.exception("the live %s tail could not open", self.kind)
            self.ready.set()
            return
        self.ready.set()
        try:
            while time.monotonic() - self.last_poll < self.idle_s:
                for arrival in tail.arrivals():
                    item = tail_item(arrival.value, arrival.headers, arrival.timestamp_ms, self.kind == REFUSED)
                    if item is not None:
                        with self.seen_lock:
                            self.seen.append(Seen(time.time_ns() // 1000, item))
        except Exception:
            log.exception("the live %s tail stopped", self.kind)
        finally:
            tail.close()


class LiveHub:
    """The process's readers, started by polls and stopped by their absence."""

    def __init__(self, open_tail: Callable[[str], LogTail], idle_s: float = IDLE_S) -> None:
        self._open_tail = open_tail  # kind -> a tail at the end of that kind's topic
        self._idle_s = idle_s
        self._lock = threading.Lock()
        self._readers: dict[str, _Reader] = {}

    def running(self) -> list[str]:
        """The kinds whose reader runs now."""
        with self._lock:
            return [kind for kind, reader in self._readers.items() if reader.running]

    def poll(self, kind: str, wanted: TailFilter, cursor_us: int | None, max_per_s: int) -> Poll:
        """The events of ``kind`` read after ``cursor_us`` that pass ``wanted``, newest first; with no
        cursor (a new viewer), none yet, and the cursor to start from."""
        now_us = time.time_ns() // 1000
        with self._lock:
            reader = self._readers.get(kind)
            if reader is None:
                reader = self._readers[kind] = _Reader(lambda: self._open_tail(kind), kind, self._idle_s)
            reader.last_poll = time.monotonic()
            if not reader.running:
                reader.start()
        if cursor_us is None:
            reader.ready.wait(5.0)  # positioned at the log's end before the viewer's "from now on"
            return Poll([], time.time_ns() // 1000, 1)
        with reader.seen_lock:
            kept = list(reader.seen)
        fresh = [s for s in kept if s.at_us > cursor_us and s.item.passes(wanted)]
        if not fresh:
            return Poll([], cursor_us, 1)
        # Past max_per_s over the time since the viewer's cursor (a poll's interval at least), 1 in N.
        allowed = max(1, int(max_per_s * max(1.0, (now_us - cursor_us) / 1e6)))
        one_in = max(1, math.ceil(len(fresh) / allowed))
        shown = fresh[len(fresh) - 1 :: -one_in][:MOST_ROWS]  # newest first, every N-th
        return Poll([s.item.row for s in shown], fresh[-1].at_us, one_in)
