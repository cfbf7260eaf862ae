"""Per-client token buckets, in process memory, bounded in size.

Why hand-written: the limiter sits on the beacon's hot path, where a Redis round trip per
request would cost more than the rest of the request; a per-process bucket stops a single
flooding client cheaply. With N collector processes a client gets at most N times the
rate, which is what a flood guard needs (not billing-grade accounting).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable


class RateLimiter:
    """``rate`` tokens per second up to ``burst`` per key; the least recently seen keys are
    forgotten beyond ``max_keys`` so memory stays bounded under spoofed-key floods."""

    def __init__(
        self, rate: float, burst: int, max_keys: int = 100_000, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate = rate
        self.burst = float(burst)
        self.max_keys = max_keys
        self._clock = clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()
        self._lock = threading.Lock()

    def allow(self, key: str) -> float:
        """Take one token for ``key``; return 0 if allowed, else seconds until the next token."""
        now = self._clock()
        with self._lock:
            tokens, last = self._buckets.pop(key, (self.burst, now))
            tokens = min(self.burst, tokens + (now - last) * self.rate)
            wait = 0.0
            if tokens >= 1.0:
                tokens -= 1.0
            else:
                wait = (1.0 - tokens) / self.rate
            self._buckets[key] = (tokens, now)
            if len(self._buckets) > self.max_keys:
                self._buckets.popitem(last=False)
        return wait
