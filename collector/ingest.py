"""Accept one beacon: site check, rate limit, enrichment, delivery. Shared by every entry point.

The beacon endpoint, the pixel, the server-side batch API and the historical importer all
call :meth:`Ingestor.ingest`; the middleware builds its events itself and uses the same
enrichment steps and sink. Errors are :class:`Rejected` with the HTTP status and a stable
reason code, so every entry point reports them the same way.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass

import redis

from collector.beacon import BadBeacon, Beacon, to_draft
from collector.ratelimit import RateLimiter
from collector.sites import SiteInfo, SiteRegistry
from footfall.config import Config
from footfall_capture.enrich.pipeline import Drop, SiteContext, Step, enrich
from footfall_capture.enrich.steps import DEFAULT_STEPS, warm_up
from footfall_capture.events import InvalidEvent, decode, encode
from footfall_capture.salts import SaltStore, SaltUnavailable, salt_day
from footfall_capture.sink import KafkaSink, SinkUnavailable, event_key


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


@dataclass(frozen=True, slots=True)
class Accepted:
    status: str  # "queued" | "spooled" | "ignored"
    event_id: str
    reason: str | None = None  # why an ignored event was dropped


class Ingestor:
    """Everything the collection endpoints need, built once per process."""

    def __init__(
        self,
        cfg: Config,
        sink: KafkaSink,
        sites: SiteRegistry | None = None,
        salts: SaltStore | None = None,
        limiter: RateLimiter | None = None,
        steps: tuple[Step, ...] = DEFAULT_STEPS,
    ) -> None:
        self.cfg = cfg
        self.sink = sink
        self.sites = sites or SiteRegistry()
        self.salts = salts or SaltStore(
            redis.Redis.from_url(cfg.redis_url, socket_timeout=2), dt.timedelta(milliseconds=cfg.ingest_max_age_ms)
        )
        self.limiter = limiter or RateLimiter(cfg.client_rate, cfg.client_burst)
        self.steps = steps
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
    ) -> Accepted:
        """Enrich and deliver one beacon; raise :class:`Rejected` or :class:`~collector.beacon.BadBeacon`."""
        site = site or self.site(beacon.site_id, facts.origin)
        draft = to_draft(
            beacon, now_ms=now_ms, ip=facts.ip, user_agent=facts.user_agent, dnt=facts.dnt, ts_window=ts_window
        )
        try:
            salt = self.salts.salt(salt_day(draft.ts, site.salt_policy, site.timezone))
        except SaltUnavailable as exc:
            raise Rejected(503, "salt_unavailable", "cannot compute visitor ids right now") from exc
        ctx = SiteContext(
            site_id=site.site_id,
            domains=site.domains,
            respect_dnt=site.respect_dnt,
            drop_bots=site.drop_bots,
            salt=salt,
        )
        try:
            event = enrich(draft, ctx, self.steps)
        except Drop as drop:
            return Accepted("ignored", draft.event_id, drop.reason.value)
        except InvalidEvent as exc:  # e.g. a page view whose URL is javascript:… (400, not 500)
            raise BadBeacon(exc.reason, exc.detail) from None
        try:
            data = encode(event)
            decode(data)  # the event must pass the same validation every consumer applies
        except InvalidEvent as exc:
            self.sink.send_invalid(encode(event) if exc.reason != "too_large" else b"", exc)
            raise BadBeacon(exc.reason, exc.detail) from None
        try:
            return Accepted(self.sink.send_raw(data, event_key(event)), event.event_id)
        except SinkUnavailable as exc:
            raise Rejected(503, "unavailable", "the event could neither be queued nor spooled") from exc
