"""``ClickstreamMiddleware``: record a Django site's own traffic as events, never in its way.

Install (see the package's README for every setting)::

    MIDDLEWARE += ["footfall_capture.middleware.ClickstreamMiddleware"]
    FOOTFALL_SITE_ID = "my-site"
    FOOTFALL_COLLECTOR_URL = "https://footfall.example.com"
    FOOTFALL_INGEST_KEY_FILE = "/run/secrets/footfall-ingest-key"

The host's response is returned untouched. On the request thread the middleware only
decides whether the request is wanted and copies the request values an event needs; host
validation, URL building, the client address, the visitor id and delivery run on a background
thread (:class:`~footfall_capture.worker.BackgroundWorker`) by the site's transport: HTTP to the
collector (:mod:`footfall_capture.http_transport`, the default) or Kafka
(:mod:`footfall_capture.kafka_transport`, an extra). Any failure is caught, counted and logged at
most once a minute, never raised into the host. Events whose salt cannot be had yet wait in
memory (never on disk: they hold the client's IP) and are retried.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable
from functools import partial
from typing import Protocol

from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest, HttpResponse

from footfall_capture.hits import Hit
from footfall_capture.page_urls import PageUrls
from footfall_capture.settings import CaptureSettings, SettingsError, from_django
from footfall_capture.sigterm import flush_on_sigterm
from footfall_capture.worker import BackgroundWorker

EXIT_DRAIN_S = 2.0  # how long a SIGTERM waits for hits being made into events before spooling them

_EXCLUDED_CACHE_SIZE = 4096  # entries of the path -> excluded memo (see _excluded)


class ClickstreamMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        try:
            self.settings = capture = from_django()
        except SettingsError as exc:
            raise ImproperlyConfigured(str(exc)) from None
        self.track = capture.track
        self.excludes = [re.compile(p) for p in capture.exclude_paths]
        self._excluded_paths: dict[str, bool] = {}
        self.sample_rate = capture.sample_rate
        self.urls = PageUrls()
        self.worker = BackgroundWorker()
        self.transport = _transport(capture, self.urls, self.worker)
        # Fetch today's and tomorrow's salts now, on the worker, so an outage from now on loses nothing.
        self.worker.submit(lambda: self.transport.hold_salts(int(time.time() * 1000)))
        flush_on_sigterm(self._flush)

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        try:
            if self._wanted(request, response):
                self.worker.submit(partial(self.transport.deliver, self._hit(request, response, started)))
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

    def _flush(self) -> None:
        """Make the hits in memory events and spool what is unsent (a SIGTERM nobody handles)."""
        self.worker.drain(EXIT_DRAIN_S)
        self.transport.close()


class Transport(Protocol):
    """How the middleware's events leave the host (on its worker thread)."""

    def hold_salts(self, now_ms: int) -> None: ...
    def deliver(self, hit: Hit) -> None: ...
    def close(self) -> None: ...


def _transport(capture: CaptureSettings, urls: PageUrls, worker: BackgroundWorker) -> Transport:
    if capture.transport == "kafka":
        # Imported only here: confluent-kafka, Redis and the enrichment libraries are the
        # ``kafka`` extra, which a site sending over HTTP does not install.
        from footfall_capture.kafka_transport import KafkaTransport

        return KafkaTransport(capture, urls, worker.stats)
    from footfall_capture.http_transport import HttpTransport

    return HttpTransport(capture, urls, worker.stats)
