"""Site settings for the hot path, cached per process so a beacon costs no database query.

A site's row is read at most every ``ttl`` seconds; unknown site ids are remembered for a
shorter time so a flood of bogus ids cannot hammer the database either.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from footfall.models import Site


@dataclass(frozen=True, slots=True)
class SiteInfo:
    site_id: str
    domains: tuple[str, ...]
    origins: frozenset[str]
    timezone: str
    salt_policy: str
    respect_dnt: bool
    drop_bots: bool


class SiteRegistry:
    def __init__(self, ttl: float = 30.0, negative_ttl: float = 5.0, max_entries: int = 10_000) -> None:
        self.ttl = ttl
        self.negative_ttl = negative_ttl
        self.max_entries = max_entries
        self._cache: dict[str, tuple[float, SiteInfo | None]] = {}
        self._lock = threading.Lock()

    def get(self, site_id: str) -> SiteInfo | None:
        now = time.monotonic()
        hit = self._cache.get(site_id)
        if hit is not None and hit[0] > now:
            return hit[1]
        row = Site.objects.filter(site_id=site_id).first()
        info = None
        if row is not None:
            info = SiteInfo(
                site_id=row.site_id,
                domains=tuple(d.lower() for d in row.domains),
                origins=row.origins(),
                timezone=row.timezone,
                salt_policy=row.salt_policy,
                respect_dnt=row.respect_dnt,
                drop_bots=row.drop_bots,
            )
        with self._lock:
            if len(self._cache) >= self.max_entries:
                self._cache.clear()
            self._cache[site_id] = (now + (self.ttl if info else self.negative_ttl), info)
        return info

    def invalidate(self) -> None:
        with self._lock:
            self._cache.clear()
