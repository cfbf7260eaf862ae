"""A circuit breaker per store: once a store failed, reads that need it fail at once for a while.

A store that is down makes each read wait out its client's timeout (MONGO_TIMEOUT_MS,
REDIS_TIMEOUT_MS) before failing; a burst of reads would hold that many web threads meanwhile,
the threads collection shares. After a failure the breaker is open for ``cool_down_s``: reads
needing the store are refused at once (the API answers 503). Then one read at a time is let
through to try it (half-open); its success closes the breaker, its failure opens it again.

Written here rather than taken from a library (pybreaker, circuitbreaker): those wrap one
callable, and one API read calls several stores, its failure naming the store that failed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class Breaker:
    """``allow()`` before a call that needs the store; ``failed()``/``succeeded()`` after it."""

    def __init__(self, cool_down_s: float = 5.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.cool_down_s = cool_down_s
        self.clock = clock
        self._lock = threading.Lock()
        self._retry_at: float | None = None  # None: closed; else open until then
        self._probing = False  # a call is trying the store (half-open)

    @property
    def open(self) -> bool:
        return self._retry_at is not None

    def allow(self) -> bool:
        """Whether a call may use the store now: always while closed; while open, one call at a
        time once the cool-down is over."""
        with self._lock:
            if self._retry_at is None:
                return True
            if self._probing or self.clock() < self._retry_at:
                return False
            self._probing = True
            return True

    def retry_after_s(self) -> float:
        """Seconds until a call may try the store again (0 while closed)."""
        with self._lock:
            return 0.0 if self._retry_at is None else max(0.0, self._retry_at - self.clock())

    def failed(self) -> None:
        with self._lock:
            self._retry_at = self.clock() + self.cool_down_s
            self._probing = False

    def succeeded(self) -> None:
        with self._lock:
            self._retry_at = None
            self._probing = False


class StoreUnavailable(RuntimeError):
    """A read refused at once: its store's breaker is open (it failed moments ago)."""

    def __init__(self, store: str, retry_after_s: float) -> None:
        super().__init__(f"the {store} store failed moments ago; not asked again for {retry_after_s:.1f} s")
        self.store = store
        self.retry_after_s = retry_after_s


class Guarded:
    """``target`` with each method call behind ``breaker``: refused with :class:`StoreUnavailable`
    while it is open; an exception of ``unavailable`` (the store is away) opens it, anything
    else (an answer, or an error the store answered with) closes it."""

    def __init__(self, target: object, store: str, breaker: Breaker,
                 unavailable: tuple[type[BaseException], ...]) -> None:  # fmt: skip
        self._target = target
        self._store = store
        self._breaker = breaker
        self._unavailable = unavailable

    def __getattr__(self, name: str) -> object:
        attr = getattr(self._target, name)
        if not callable(attr):
            return attr
        breaker = self._breaker

        def call(*args: object, **kwargs: object) -> object:
            if not breaker.allow():
                raise StoreUnavailable(self._store, breaker.retry_after_s())
            try:
                result = attr(*args, **kwargs)
            except self._unavailable:
                breaker.failed()
                raise
            except BaseException:
                breaker.succeeded()
                raise
            breaker.succeeded()
            return result

        return call
