"""A per-process cache of reads of settled days, keyed on the days' load generations.

A settled day's rollup documents change only when the day is loaded again, and every load
writes a new ``generation`` into the day's ``batch_runs`` document (see
:func:`historical.store.run_document`), which each query reads anyway to find its settled
days. A read keyed on ``(what, site, parameters, ((day, generation), ...))`` is therefore
valid for exactly as long as its key can be formed: a re-rolled day has a new generation, so
the next query misses and reads the new documents; nothing has to be invalidated, and old
entries age out of the LRU. Days without a generation (settled before generations existed)
are never cached.

The least recently used entries go first once the cached results hold more than
``max_items`` items (documents or values), so memory stays bounded whatever the ranges.
Results are shared between threads: callers must not mutate them.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Collection, Hashable, Mapping, Sized
from dataclasses import dataclass
from typing import TypeVar

from cachetools import LRUCache

T = TypeVar("T", bound=Sized)


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    uncacheable: int = 0  # reads of days without a generation


class SettledCache:
    """Results of reads of settled days (see the module docstring); thread-safe."""

    def __init__(self, max_items: int) -> None:
        if max_items < 1:
            raise ValueError("max_items must be at least 1 (use no cache to disable caching)")
        # A result counts its items plus one, so empty results are bounded too.
        self._lru: LRUCache = LRUCache(maxsize=max_items, getsizeof=lambda value: len(value) + 1)
        self._lock = threading.Lock()
        self.stats = CacheStats()

    def read(
        self,
        key: Hashable,
        days: Collection[str],
        generations: Mapping[str, str],
        fetch: Callable[[], T],
    ) -> T:
        """``fetch()``'s result for ``key`` over ``days``, from the cache when the same read
        was made while each day had the generation it has in ``generations``."""
        stamped = tuple((day, generations.get(day)) for day in sorted(days))
        if any(generation is None for _, generation in stamped):
            with self._lock:
                self.stats.uncacheable += 1
            return fetch()
        full_key = (key, stamped)
        with self._lock:
            found = self._lru.get(full_key)
            if found is not None:
                self.stats.hits += 1
                return found
            self.stats.misses += 1
        # Read outside the lock: a slow store read must not hold up hits of other threads
        # (two threads missing the same key both read it; the second write wins, same data).
        result = fetch()
        # A result larger than the whole cache (ValueError) is served and not kept.
        with self._lock, contextlib.suppress(ValueError):
            self._lru[full_key] = result
        return result

    def __len__(self) -> int:
        with self._lock:
            return len(self._lru)

    @property
    def items(self) -> int:
        """How many items (documents or values, plus one per entry) the cache holds."""
        with self._lock:
            return int(self._lru.currsize)
