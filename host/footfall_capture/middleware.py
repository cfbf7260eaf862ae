"""``ClickstreamMiddleware``: record a Django site's own traffic as events, never in its way.

Install (see the package's README for every setting)::

    MIDDLEWARE += ["footfall_capture.middleware.ClickstreamMiddleware"]
    FOOTFALL_SITE_ID = "my-site"
    FOOTFALL_KAFKA_BOOTSTRAP_SERVERS = "kafka-1:9092,kafka-2:9092"
    FOOTFALL_REDIS_URL = "redis://footfall-redis:6379/0"

The host's response is returned untouched. On the request thread the middleware only
decides whether the request is wanted and copies the request values an event needs; host
validation, URL building, the client address, enrichment, encoding and delivery run on a
background thread (:class:`~footfall_capture.worker.BackgroundWorker`), through the same
:func:`~footfall_capture.accept.accept` step as the collector's endpoints. Any failure is
caught, counted and logged at most once a minute, never raised into the host. Events go to
Kafka, or to the durable spool while Kafka is unreachable; invalid ones to the invalid-events
topic with their reason. The day's and the next day's salts are held in memory, so a Redis
outage does not stop events either. Events whose salt cannot be had yet wait in memory (never
on disk: they hold the client's IP) and are retried.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable
from functools import lru_cache, partial

import redis
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest, HttpResponse

from footfall_capture.accept import accept
from footfall_capture.enrich.pipeline import SiteContext
from footfall_capture.enrich.steps import warm_up
from footfall_capture.enrich.visitor import site_salt
from footfall_capture.events import InvalidEvent
from footfall_capture.hits import Hit
from footfall_capture.page_urls import PageUrls
from footfall_capture.salt_days import SaltUnavailable, salt_day
from footfall_capture.salts import SaltStore
from footfall_capture.settings import SettingsError, from_django
from footfall_capture.sink import shared_sink
from footfall_capture.worker import BackgroundWorker, TryLater

_EXCLUDED_CACHE_SIZE = 4096  # entries of the path -> excluded memo (see _excluded)


class ClickstreamMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        try:
            self.settings = capture = from_django()
        except SettingsError as exc:
            raise ImproperlyConfigured(str(exc)) from None
        self.track = capture.track
        self.event_type = "request" if capture.track == "requests" else "pageview"
        self.excludes = [re.compile(p) for p in capture.exclude_paths]
        self._excluded_paths: dict[str, bool] = {}
        self.sample_rate = capture.sample_rate
        self.urls = PageUrls()
        self.worker = BackgroundWorker()
        self.sink = shared_sink(capture)
        self.salts = SaltStore(redis.Redis.from_url(capture.redis_url, socket_timeout=2), capture.late_window)
        self._day_salt, self._site_salt = b"", b""  # the last day's salt seen, and the site's salt derived from it
        self._context = lru_cache(maxsize=16)(self._new_context)  # per (salt, host): both rarely change
        # Built when the server loads the app: load the enrichment tables now (pure data,
        # safe before a fork) rather than in the first page views, and fetch today's and
        # tomorrow's salts on the worker, so a Redis outage from now on loses nothing.
        warm_up()
        self.worker.submit(self._hold_salts)

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        try:
            if self._wanted(request, response):
                self.worker.submit(partial(self._deliver, self._hit(request, response, started)))
        except Exception as exc:  # tracking must never break the host app
            self.worker.failed("build_failed", exc)
        return response

    def _wanted(self, request: HttpRequest, response: HttpResponse) -> bool:
        path = request.path
        excluded = self._excluded_paths.get(path)
        if excluded is None:
            excluded = self._excluded(path)
        if excluded:
            return False
        if self.track == "pageviews":
            # A page view is a successful HTML page, not an asset, redirect or API call.
            if request.method != "GET" or response.status_code != 200:
                return False
            if not response.get("Content-Type", "").startswith("text/html"):
                return False
        return self.sample_rate >= 1.0 or random.random() < self.sample_rate  # noqa: S311 - sampling, not security

    def _excluded(self, path: str) -> bool:
        """Whether ``path`` matches an excluded pattern, memoized per path (a site's paths
        repeat). Bounded; a race between request threads at worst computes an entry twice."""
        excluded = any(p.search(path) for p in self.excludes)
        if len(self._excluded_paths) >= _EXCLUDED_CACHE_SIZE:
            self._excluded_paths.clear()
        self._excluded_paths[path] = excluded
        return excluded

    def _hit(self, request: HttpRequest, response: HttpResponse, started: float) -> Hit:
        """The request thread's whole share of the work: copy, do not compute."""
        get = request.META.get
        dnt = get("HTTP_DNT") == "1" or get("HTTP_SEC_GPC") == "1"
        hit = Hit(int(time.time() * 1000), request.path, tuple(map(get, self.urls.keys)), get("HTTP_REFERER"),
                  get("HTTP_USER_AGENT"), get("REMOTE_ADDR"), get("HTTP_X_FORWARDED_FOR"), dnt)  # fmt: skip
        if self.track == "requests":
            hit.method, hit.status = request.method, response.status_code
            hit.duration_ms = round((time.perf_counter() - started) * 1000, 3)
        return hit

    def _hold_salts(self) -> None:
        """Fetch the current day's salt and the next one's into memory (a job on the worker)."""
        self._salt(int(time.time() * 1000))

    def _salt(self, ts: int) -> bytes:
        """The site's salt of the day of ``ts`` (raises :class:`TryLater` while none is held)."""
        try:
            day_salt = self.salts.salt(salt_day(ts, self.settings.salt_policy, self.settings.timezone))
        except SaltUnavailable as exc:
            raise TryLater(str(exc)) from None
        if day_salt is not self._day_salt:  # derived again only when the day's salt changes (worker thread only)
            self._day_salt, self._site_salt = day_salt, site_salt(day_salt, self.settings.site_id)
        return self._site_salt

    def _deliver(self, hit: Hit) -> None:
        """On the worker thread: the hit's event through ``accept`` (failures, a disallowed
        host among them, are counted by the worker)."""
        salt = self._salt(hit.ts)  # first: a job kept for later must not have done anything yet
        url, host = self.urls.url_and_host(hit.path, hit.url_values)
        draft = hit.draft(self.settings.site_id, self.event_type, url, self.settings.trusted_proxies)
        try:
            result = accept(draft, self._context(salt, host), self.sink)
        except InvalidEvent as exc:  # on the invalid-events topic already
            self.worker.stats[f"invalid_{exc.reason}"] += 1
            return
        if result.reason is not None:
            self.worker.stats[f"dropped_{result.reason}"] += 1

    def _new_context(self, salt: bytes, host: str) -> SiteContext:
        capture = self.settings
        return SiteContext(
            site_id=capture.site_id,
            domains=capture.domains or (host,),  # the site's own host makes referrers internal
            respect_dnt=capture.respect_dnt,
            drop_bots=capture.drop_bots,
            salt=salt,
        )
