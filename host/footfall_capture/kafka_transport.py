"""The middleware's Kafka transport, for an operator's own sites: hits enriched on the host and
produced to the server's Kafka, with the day's salts read from its Redis.

Needs the ``kafka`` extra (confluent-kafka, Redis and the enrichment libraries), imported only
by a site that chose this transport. Events go through the same
:func:`~footfall_capture.accept.accept` step as the collector's endpoints; invalid ones to the
invalid-events topic with their reason. The day's and the next day's salts are held in memory,
so a Redis outage does not stop events either.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache

import redis

from footfall_capture.accept import accept
from footfall_capture.enrich.pipeline import SiteContext
from footfall_capture.enrich.steps import warm_up
from footfall_capture.enrich.visitor import site_salt
from footfall_capture.events import InvalidEvent
from footfall_capture.hits import Hit
from footfall_capture.page_urls import PageUrls
from footfall_capture.salt_days import SaltUnavailable, salt_day
from footfall_capture.salts import SaltStore
from footfall_capture.settings import CaptureSettings
from footfall_capture.sink import shared_sink
from footfall_capture.worker import TryLater


class KafkaTransport:
    """``deliver(hit)`` on the middleware's worker thread; ``close()`` flushes the producer."""

    def __init__(self, settings: CaptureSettings, urls: PageUrls, stats: Counter[str]) -> None:
        assert settings.redis_url is not None  # the settings require it for this transport
        self.settings = settings
        self.urls = urls
        self.stats = stats
        self.sink = shared_sink(settings)
        self.salts = SaltStore(redis.Redis.from_url(settings.redis_url, socket_timeout=2), settings.late_window)
        self._day_salt, self._site_salt = b"", b""  # the last day's salt seen, and the site's salt derived from it
        self._context = lru_cache(maxsize=16)(self._new_context)  # per (salt, host): both rarely change
        # Built when the server loads the app: load the enrichment tables now (pure data, safe
        # before a fork) rather than in the first page views.
        warm_up()

    def hold_salts(self, now_ms: int) -> None:
        """Fetch the current day's salt and the next one's into memory (a job on the worker)."""
        self._salt(now_ms)

    def _salt(self, ts: int) -> bytes:
        """The site's salt of the day of ``ts`` (raises :class:`TryLater` while none is held)."""
        try:
            day_salt = self.salts.salt(salt_day(ts, self.settings.salt_policy, self.settings.timezone))
        except SaltUnavailable as exc:
            raise TryLater(str(exc)) from None
        if day_salt is not self._day_salt:  # derived again only when the day's salt changes (worker thread only)
            self._day_salt, self._site_salt = day_salt, site_salt(day_salt, self.settings.site_id)
        return self._site_salt

    def deliver(self, hit: Hit) -> None:
        """The hit's event through ``accept`` (failures, a disallowed host among them, are
        counted by the worker)."""
        salt = self._salt(hit.ts)  # first: a job kept for later must not have done anything yet
        url, host = self.urls.url_and_host(hit.path, hit.url_values)
        draft = hit.draft(self.settings.site_id, self.settings.event_type, url, self.settings.trusted_proxies)
        try:
            result = accept(draft, self._context(salt, host), self.sink)
        except InvalidEvent as exc:  # on the invalid-events topic already
            self.stats[f"invalid_{exc.reason}"] += 1
            return
        if result.reason is not None:
            self.stats[f"dropped_{result.reason}"] += 1

    def close(self) -> None:
        self.sink.close()

    def _new_context(self, salt: bytes, host: str) -> SiteContext:
        capture = self.settings
        return SiteContext(
            site_id=capture.site_id,
            domains=capture.domains or (host,),  # the site's own host makes referrers internal
            respect_dnt=capture.respect_dnt,
            drop_bots=capture.drop_bots,
            salt=salt,
            query_params=capture.query_params,
        )
