"""Site settings for the hot path, cached per process so a beacon costs no database query.

A site's row is read at most every ``ttl`` seconds; unknown site ids are remembered for a
shorter time so a flood of bogus ids cannot hammer the database either.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from footfall.models import Site
from footfall_capture.query_params import site_query_params


@dataclass(frozen=True, slots=True)
class SiteInfo:
    site_id: str
    domains: tuple[str, ...]
    origins: frozenset[str]
    timezone: str
    salt_policy: str
    respect_dnt: bool
    drop_bots: bool
    query_params: frozenset[str] = frozenset()  # kept in page URLs besides ref and source

    def page_host_problem(self, url: str | None, url_required: bool = True) -> str | None:
        """Why an event with page ``url`` may not be recorded for this site, or None if it may:
        a site that lists its domains takes events only from pages on them or their
        subdomains. The Origin header cannot stand in for this: a pixel or curl sends none.
        Without ``url_required`` an event with no URL at all passes (a keyed server's own event)."""
        if not self.domains or (not url and not url_required):
            return None
        host = page_host(url)
        if host is None:
            return f"the event has no http(s) page URL; {self.site_id!r} takes events only from its domains"
        if any(host == d or host.endswith("." + d) for d in map(_bare_host, self.domains)):
            return None
        return f"page host {host!r} is not one of {self.site_id!r}'s domains ({', '.join(self.domains)})"


def page_host(url: str | None) -> str | None:
    """The lower-case host name of an http(s) ``url`` (no port, no trailing dot), or None."""
    if not url:
        return None
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname
    except ValueError:  # e.g. a malformed IPv6 literal
        return None
    if parts.scheme.lower() not in {"http", "https"} or not host:
        return None
    return _ascii(host.rstrip("."))


def _ascii(host: str) -> str:
    """``host`` in its ASCII (IDNA) form, as events store it; unchanged if it has none."""
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return host


def _bare_host(domain: str) -> str:
    """A listed domain without a port (``example.com:8080`` matches pages of ``example.com``)."""
    host, _, port = domain.rpartition(":")
    return _ascii((host if host and port.isdigit() and "]" not in port else domain).lower().rstrip("."))


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
                query_params=site_query_params(row.query_params),
            )
        with self._lock:
            if len(self._cache) >= self.max_entries:
                self._cache.clear()
            self._cache[site_id] = (now + (self.ttl if info else self.negative_ttl), info)
        return info

    def invalidate(self) -> None:
        with self._lock:
            self._cache.clear()
