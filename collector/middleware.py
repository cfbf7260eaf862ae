"""``ClickstreamMiddleware``: record a Django site's own traffic as events, never in its way.

Install (two settings, plus ``FOOTFALL_SITE_ID``)::

    INSTALLED_APPS += ["collector"]
    MIDDLEWARE += ["collector.middleware.ClickstreamMiddleware"]
    FOOTFALL_SITE_ID = "my-site"

Optional ``FOOTFALL_COLLECTOR`` (a dict) tunes it: ``TRACK`` ("pageviews": successful
HTML GET responses, the default; "requests": every request with method, status and
duration), ``EXCLUDE_PATHS`` (regexes; static files, media, health checks, admin and
favicon by default), ``SAMPLE_RATE`` (0 to 1), ``DOMAINS``, ``RESPECT_DNT``, ``DROP_BOTS``,
``SALT_POLICY``, ``TIMEZONE``. Kafka and Redis come from the environment like the rest of
Footfall (``KAFKA_BOOTSTRAP_SERVERS``, ``REDIS_URL``).

The host's response is returned untouched. Building the event is cheap and done inline;
enrichment and delivery run on a background thread; any failure is caught, counted and
logged at most once a minute — never raised.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable
from typing import Any

import redis
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest, HttpResponse

from collector.beacon import asks_not_to_track, client_ip
from collector.enrich.pipeline import Draft, Drop, SiteContext, enrich
from collector.enrich.steps import DEFAULT_STEPS
from collector.runtime import footfall_config
from collector.salts import SALT_POLICIES, SaltStore, salt_day
from collector.sink import BackgroundWorker, KafkaSink, get_sink
from footfall.events import new_event_id

DEFAULT_EXCLUDES = (r"^/static/", r"^/media/", r"^/admin/", r"^/favicon\.ico$", r"^/(health|healthz|ready|readyz)/?$")
TRACK_MODES = ("pageviews", "requests")


class ClickstreamMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        options: dict[str, Any] = getattr(settings, "FOOTFALL_COLLECTOR", {})
        self.site_id: str = getattr(settings, "FOOTFALL_SITE_ID", "") or options.get("SITE_ID", "")
        if not self.site_id:
            raise ImproperlyConfigured("ClickstreamMiddleware needs FOOTFALL_SITE_ID in settings")
        self.track: str = options.get("TRACK", "pageviews")
        if self.track not in TRACK_MODES:
            raise ImproperlyConfigured(f"FOOTFALL_COLLECTOR['TRACK'] must be one of {TRACK_MODES}")
        self.excludes = [re.compile(p) for p in options.get("EXCLUDE_PATHS", DEFAULT_EXCLUDES)]
        self.sample_rate = float(options.get("SAMPLE_RATE", 1.0))
        if not 0.0 < self.sample_rate <= 1.0:
            raise ImproperlyConfigured("FOOTFALL_COLLECTOR['SAMPLE_RATE'] must be in (0, 1]")
        self.salt_policy: str = options.get("SALT_POLICY", "daily")
        if self.salt_policy not in SALT_POLICIES:
            raise ImproperlyConfigured(f"FOOTFALL_COLLECTOR['SALT_POLICY'] must be one of {SALT_POLICIES}")
        self.timezone: str = options.get("TIMEZONE", "UTC")
        self.context = SiteContext(
            site_id=self.site_id,
            domains=tuple(options.get("DOMAINS", ())),
            respect_dnt=bool(options.get("RESPECT_DNT", True)),
            drop_bots=bool(options.get("DROP_BOTS", False)),
        )
        self.cfg = footfall_config()
        self.worker = BackgroundWorker()
        self.sink: KafkaSink | None = None  # the process's shared sink unless set
        self._salts: SaltStore | None = None

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        try:
            self._track(request, response, (time.perf_counter() - started) * 1000)
        except Exception as exc:  # tracking must never break the host app
            self.worker.failed("build_failed", exc)
        return response

    def _wanted(self, request: HttpRequest, response: HttpResponse) -> bool:
        if any(p.search(request.path) for p in self.excludes):
            return False
        if self.track == "pageviews":
            # A page view is a successful HTML page, not an asset, redirect or API call.
            if request.method != "GET" or response.status_code != 200:
                return False
            if not response.get("Content-Type", "").startswith("text/html"):
                return False
        return self.sample_rate >= 1.0 or random.random() < self.sample_rate  # noqa: S311 - sampling, not security

    def _track(self, request: HttpRequest, response: HttpResponse, duration_ms: float) -> None:
        if not self._wanted(request, response):
            return
        now_ms = int(time.time() * 1000)
        requests_mode = self.track == "requests"
        draft = Draft(
            site_id=self.site_id,
            type="request" if requests_mode else "pageview",
            ts=now_ms,
            received_at=now_ms,
            event_id=new_event_id(),
            url=request.build_absolute_uri()[:8192],
            referrer=request.headers.get("Referer") or None,
            method=request.method if requests_mode else None,
            status=response.status_code if requests_mode else None,
            duration_ms=round(duration_ms, 3) if requests_mode else None,
            ip=client_ip(
                request.META.get("REMOTE_ADDR"), request.META.get("HTTP_X_FORWARDED_FOR"), self.cfg.trusted_proxies
            ),
            user_agent=request.headers.get("User-Agent", "")[:2048],
            dnt=asks_not_to_track(request.headers),
        )
        host = request.get_host().rsplit(":", 1)[0].lower()
        self.worker.submit(lambda: self._deliver(draft, host))

    def _deliver(self, draft: Draft, host: str) -> None:
        """On the worker thread: salt, enrich, send (failures are counted by the worker)."""
        if self._salts is None:
            self._salts = SaltStore(redis.Redis.from_url(self.cfg.redis_url, socket_timeout=2))
        salt = self._salts.salt(salt_day(draft.ts, self.salt_policy, self.timezone))
        ctx = SiteContext(
            site_id=self.context.site_id,
            domains=self.context.domains or (host,),  # the site's own host makes referrers internal
            respect_dnt=self.context.respect_dnt,
            drop_bots=self.context.drop_bots,
            salt=salt,
        )
        try:
            event = enrich(draft, ctx, DEFAULT_STEPS)
        except Drop as drop:
            self.worker.stats[f"dropped_{drop.reason.value}"] += 1
            return
        (self.sink or get_sink(self.cfg)).send(event)
