"""The server's side of ingestion: site check, rate limit and salt, then :func:`~footfall_capture.accept.accept`.

The beacon endpoint, the pixel, the server-side batch API and the historical importer all
call :meth:`Ingestor.ingest`, which hands the draft to the same ``accept`` step the host
middleware uses. Errors are :class:`Rejected` with the HTTP status and a stable reason
code, so every entry point reports them the same way.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass

import redis

from collector.beacon import BadBeacon, Beacon, to_draft
from collector.importing import Given
from collector.ratelimit import RateLimiter
from collector.sightings import Sightings
from collector.sites import SiteInfo, SiteRegistry, page_host
from footfall.config import Config
from footfall_capture.accept import Accepted, Sink, accept
from footfall_capture.enrich.pipeline import SiteContext
from footfall_capture.enrich.steps import DEFAULT_STEPS, IMPORTED_STEPS, warm_up
from footfall_capture.enrich.visitor import site_salt
from footfall_capture.events import InvalidEvent
from footfall_capture.salt_days import SaltUnavailable, salt_day
from footfall_capture.salts import SaltStore
from footfall_capture.sink import KafkaSink, SinkUnavailable


class Rejected(Exception):
    """The request is refused with ``status`` (403, 429, 503, ...) and a reason code."""

    def __init__(self, status: int, reason: str, detail: str = "", retry_after: float | None = None) -> None:
        super().__init__(f"{status} {reason}: {detail}")
        self.status = status
        self.reason = reason
        self.detail = detail
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class RequestFacts:
    """What the request tells about the client; the IP is used in memory only."""

    ip: str | None
    user_agent: str
    dnt: bool
    origin: str | None = None


def salt_store(cfg: Config) -> SaltStore:
    """The server's store of daily salts: its Redis, and the late-event window as their lifetime."""
    return SaltStore(
        redis.Redis.from_url(cfg.redis_url, socket_timeout=2), dt.timedelta(milliseconds=cfg.ingest_max_age_ms)
    )


class Ingestor:
    """Everything the collection endpoints need, built once per process."""

    def __init__(
        self,
        cfg: Config,
        sink: KafkaSink,
        sites: SiteRegistry | None = None,
        salts: SaltStore | None = None,
        limiter: RateLimiter | None = None,
        sightings: Sightings | None = None,
    ) -> None:
        self.cfg = cfg
        self.sink = sink
        self.sites = sites or SiteRegistry()
        self.salts = salts or salt_store(cfg)
        self.limiter = limiter or RateLimiter(cfg.client_rate, cfg.client_burst)
        # Short timeouts: the installation check's record is best effort and must never hold a beacon.
        self.sightings = sightings or Sightings.at(cfg.redis_url, timeout_s=0.2)
        # Built on the first beacon of a process (or at server start by BeaconMiddleware):
        # load the enrichment tables once, now, not a piece in each of the first requests.
        warm_up()

    def site(self, site_id: str, origin: str | None = None) -> SiteInfo:
        """The site, or :class:`Rejected` 403 if unknown or ``origin`` is not allowed."""
        info = self.sites.get(site_id)
        if info is None:
            raise Rejected(403, "unknown_site", f"no site {site_id!r} is registered")
        if origin is not None and origin.lower().rstrip("/") not in info.origins:
            raise Rejected(403, "origin_not_allowed", f"origin {origin!r} may not send events for {site_id!r}")
        return info

    def site_salts(self, site: SiteInfo, now_ms: int) -> dict[str, bytes]:
        """``site``'s salts of the day of ``now_ms`` under its policy, and of the days before and
        after (an event made just before midnight may be sent after it): ISO day -> salt.
        Raise :class:`Rejected` 503 while the day's salts are unavailable."""
        today = salt_day(now_ms, site.salt_policy, site.timezone)
        try:
            return {
                day.isoformat(): site_salt(self.salts.salt(day), site.site_id)
                for day in (today - dt.timedelta(days=1), today, today + dt.timedelta(days=1))
            }
        except SaltUnavailable as exc:
            raise Rejected(503, "salt_unavailable", "the salts cannot be read right now", retry_after=5) from exc

    def check_rate(self, facts: RequestFacts) -> None:
        # Keyed by a digest so the limiter's memory never holds raw addresses either.
        key = hashlib.blake2b((facts.ip or "-").encode(), digest_size=8).hexdigest()
        wait = self.limiter.allow(key)
        if wait > 0:
            raise Rejected(429, "rate_limited", "too many events from this client", retry_after=wait)

    def ingest(
        self,
        beacon: Beacon,
        facts: RequestFacts,
        now_ms: int,
        ts_window: tuple[int, int] | None = None,
        site: SiteInfo | None = None,
        any_host: bool = False,
        url_required: bool = True,
        given: Given | None = None,
        sink: Sink | None = None,
    ) -> Accepted:
        """Enrich and deliver one beacon; raise :class:`Rejected` or :class:`~collector.beacon.BadBeacon`.

        Unless ``any_host`` (a trusted sender: a key with the ``ingest:any-host`` scope, or the
        operator's import), a page URL off the site's listed domains is refused with 403, and so
        is a missing one if ``url_required`` (anonymous beacons: omitting it must not bypass the check)."""
        site = site or self.site(beacon.site_id, facts.origin)
        if not any_host and site.domains:
            if beacon.url and page_host(beacon.url) is None:  # bad input first: 400, as enrichment says
                raise BadBeacon("invalid_field", "url is not an http(s) URL with a host")
            problem = site.page_host_problem(beacon.url, url_required)
            if problem is not None:
                raise Rejected(403, "page_host_not_allowed", problem)
        draft = to_draft(
            beacon, now_ms=now_ms, ip=facts.ip, user_agent=facts.user_agent, dnt=facts.dnt, ts_window=ts_window
        )
        if given is not None:
            draft.ua, draft.country = given.ua, given.country
        try:
            salt = self.salts.salt(salt_day(draft.ts, site.salt_policy, site.timezone))
        except SaltUnavailable as exc:
            raise Rejected(503, "salt_unavailable", "cannot compute visitor ids right now") from exc
        ctx = SiteContext(
            site_id=site.site_id,
            domains=site.domains,
            respect_dnt=site.respect_dnt,
            drop_bots=site.drop_bots,
            salt=site_salt(salt, site.site_id),
            query_params=site.query_params,
        )
        try:
            return accept(draft, ctx, sink or self.sink, DEFAULT_STEPS if given is None else IMPORTED_STEPS)
        except InvalidEvent as exc:  # e.g. a page view whose URL is javascript:… (400, not 500)
            raise BadBeacon(exc.reason, exc.detail) from None
        except SinkUnavailable as exc:
            raise Rejected(503, "unavailable", "the event could neither be queued nor spooled") from exc
