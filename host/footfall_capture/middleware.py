"""``ClickstreamMiddleware``: record a Django site's own traffic as events, never in its way.

Install (see the package's README for every setting)::

    MIDDLEWARE += ["footfall_capture.middleware.ClickstreamMiddleware"]
    FOOTFALL_SITE_ID = "my-site"
    FOOTFALL_KAFKA_BOOTSTRAP_SERVERS = "kafka-1:9092,kafka-2:9092"
    FOOTFALL_REDIS_URL = "redis://footfall-redis:6379/0"

The host's response is returned untouched. On the request thread the middleware only
decides whether the request is wanted and copies the request values an event needs; host
validation, URL building, the client address, enrichment, encoding and delivery run on a
background thread (:class:`~footfall_capture.worker.BackgroundWorker`). Any failure is
caught, counted and logged at most once a minute, never raised into the host. Events go to
Kafka, or to the durable spool while Kafka is unreachable; the day's and the next day's
salts are held in memory, so a Redis outage does not stop them either. Events whose salt
cannot be had yet wait in memory (never on disk: they hold the client's IP) and are retried.
"""

from __future__ import annotations

import random
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import redis
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest, HttpResponse

from footfall_capture.enrich.addresses import client_address
from footfall_capture.enrich.pipeline import Draft, Drop, SiteContext, Step, enrich
from footfall_capture.enrich.steps import DEFAULT_STEPS, warm_up
from footfall_capture.events import new_event_id
from footfall_capture.salts import SaltStore, SaltUnavailable, salt_day
from footfall_capture.settings import CaptureSettings, SettingsError, from_django
from footfall_capture.sink import COLLECTOR_PRODUCER, KafkaSink
from footfall_capture.spool import Spool
from footfall_capture.worker import BackgroundWorker, TryLater

# What an event needs from a request's META, copied on the request thread (the request
# object itself must not outlive the request), as a tuple in this order; the first
# _URL_KEYS are the ones get_host() and build_absolute_uri() read. Each middleware appends
# the keys Django's request.scheme reads (see _scheme_keys), so the scheme is resolved on
# the worker thread too.
_META_KEYS = (
    "QUERY_STRING", "HTTP_HOST", "HTTP_X_FORWARDED_HOST", "HTTP_X_FORWARDED_PORT", "SERVER_NAME", "SERVER_PORT",
    "HTTP_REFERER", "HTTP_USER_AGENT", "REMOTE_ADDR", "HTTP_X_FORWARDED_FOR", "HTTP_DNT", "HTTP_SEC_GPC",
)  # fmt: skip
_URL_KEYS = 6
_REFERER, _USER_AGENT, _REMOTE_ADDR, _FORWARDED_FOR, _DNT, _SEC_GPC = range(_URL_KEYS, len(_META_KEYS))
_MISSING = object()  # stands for a key absent from META (a present key may hold any value)

_URL_CACHE_SIZE = 4096  # entries of the worker's URL memo (see ClickstreamMiddleware._url_and_host)
_EXCLUDED_CACHE_SIZE = 4096  # entries of the request thread's path -> excluded memo (see _excluded)


@dataclass(slots=True)  # not frozen: a frozen dataclass's __init__ costs twice as much
class Hit:
    """One tracked request as the request thread saw it; the IP in ``values`` stays in memory.

    ``values`` holds META's values for the middleware's keys (:data:`_META_KEYS`, then
    :func:`_scheme_keys`), in that order, ``_MISSING`` for an absent key."""

    ts: int
    path: str
    values: tuple[object, ...]
    method: str | None = None  # "requests" mode only, like status and duration
    status: int | None = None
    duration_ms: float | None = None

    def get(self, index: int, default: str | None = None) -> str | None:
        """The META value at ``index`` of :data:`_META_KEYS`, or ``default`` if it was absent."""
        value = self.values[index]
        return default if value is _MISSING else value  # type: ignore[return-value]

    def meta(self, keys: tuple[str, ...]) -> dict[str, object]:
        """The copied values as a META dict (absent keys absent, as in the request's); ``keys``
        are the ones they were copied for."""
        return {key: value for key, value in zip(keys, self.values, strict=True) if value is not _MISSING}


def _scheme_keys() -> tuple[str, ...]:
    """The META keys Django's ``request.scheme`` reads: the header ``SECURE_PROXY_SSL_HEADER``
    names, if set, and the WSGI server's ``wsgi.url_scheme``. Read when the middleware is
    built, like its other settings; a malformed setting is an error then, not in every request."""
    header = settings.SECURE_PROXY_SSL_HEADER
    if not header:
        return ("wsgi.url_scheme",)
    try:
        name, _secure_value = header
    except (TypeError, ValueError):
        raise ImproperlyConfigured("SECURE_PROXY_SSL_HEADER must be a tuple of two values") from None
    return (name, "wsgi.url_scheme")


class _SeenRequest(HttpRequest):
    """A :class:`Hit` dressed as a request, so the worker thread gets the host and the absolute
    URL from Django's own ``get_host()`` (ALLOWED_HOSTS, X-Forwarded-Host) and
    ``build_absolute_uri()`` rather than from a copy of their rules."""

    def __init__(self, hit: Hit, keys: tuple[str, ...]) -> None:  # no super().__init__(): no GET/POST/FILES
        self.META = hit.meta(keys)
        self.path = self.path_info = hit.path
        self._host: str | None = None

    def _get_scheme(self) -> str:  # as WSGIRequest's; Django's scheme property asks the proxy header first
        return self.META.get("wsgi.url_scheme")  # type: ignore[return-value]

    def get_host(self) -> str:
        if self._host is None:  # build_absolute_uri() asks again: validate once
            self._host = super().get_host()
        return self._host


_sinks: dict[tuple[object, ...], KafkaSink] = {}
_sinks_lock = threading.Lock()


def shared_sink(capture: CaptureSettings) -> KafkaSink:
    """The process's sink for these settings: one producer and one spool however many times
    Django builds the middleware (each test client, each handler). Its producer is created
    lazily, after any fork."""
    key = (capture.kafka, capture.spool_dir, capture.spool_max_bytes)
    with _sinks_lock:
        sink = _sinks.get(key)
        if sink is None:
            spool = Spool(capture.spool_dir, capture.spool_max_bytes)
            sink = _sinks[key] = KafkaSink(capture.kafka, spool, **COLLECTOR_PRODUCER)
    return sink


class ClickstreamMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        try:
            self.settings = capture = from_django()
        except SettingsError as exc:
            raise ImproperlyConfigured(str(exc)) from None
        self.site_id = capture.site_id
        self.track = capture.track
        self.excludes = [re.compile(p) for p in capture.exclude_paths]
        self._excluded_paths: dict[str, bool] = {}  # see _excluded
        self.sample_rate = capture.sample_rate
        self._keys = _META_KEYS + _scheme_keys()  # what _capture copies from META
        self._missing = (_MISSING,) * len(self._keys)
        # The enrichment steps every event goes through (see footfall_capture.enrich.steps
        # for their order rules). Each job reads it when it runs on the worker thread.
        self.steps: tuple[Step, ...] = DEFAULT_STEPS
        self.context = SiteContext(
            site_id=capture.site_id,
            domains=capture.domains,
            respect_dnt=capture.respect_dnt,
            drop_bots=capture.drop_bots,
        )
        self.worker = BackgroundWorker()
        self.sink = shared_sink(capture)
        self.salts = SaltStore(redis.Redis.from_url(capture.redis_url, socket_timeout=2), capture.late_window)
        self._ctx_key: tuple[bytes, str] | None = None  # the worker's last (salt, host) and its context
        self._ctx = self.context
        self._urls: dict[tuple[str, tuple[object, ...], tuple[object, ...]], tuple[str, str]] = {}  # see _url_and_host
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
                hit = self._capture(request, response, (time.perf_counter() - started) * 1000)
                self.worker.submit(partial(self._deliver, hit))
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
        repeat). Bounded like the worker's URL memo; a race between request threads at worst
        computes an entry twice, with the same answer."""
        excluded = any(p.search(path) for p in self.excludes)
        if len(self._excluded_paths) >= _EXCLUDED_CACHE_SIZE:
            self._excluded_paths.clear()
        self._excluded_paths[path] = excluded
        return excluded

    def _capture(self, request: HttpRequest, response: HttpResponse, duration_ms: float) -> Hit:
        """The request thread's whole share of the work: copy, do not compute."""
        values = tuple(map(request.META.get, self._keys, self._missing))
        if self.track == "requests":
            return Hit(int(time.time() * 1000), request.path, values,
                       request.method, response.status_code, round(duration_ms, 3))  # fmt: skip
        return Hit(int(time.time() * 1000), request.path, values)

    def _hold_salts(self) -> None:
        """Fetch the current day's salt and the next one's into memory (a job on the worker)."""
        self._salt(int(time.time() * 1000))

    def _salt(self, ts: int) -> bytes:
        try:
            return self.salts.salt(salt_day(ts, self.settings.salt_policy, self.settings.timezone))
        except SaltUnavailable as exc:
            raise TryLater(str(exc)) from None

    def _deliver(self, hit: Hit) -> None:
        """On the worker thread: build, salt, enrich, send (failures are counted by the worker)."""
        salt = self._salt(hit.ts)  # first: a job kept for later must not have done anything yet
        url, host = self._url_and_host(hit)
        draft = Draft(
            site_id=self.site_id,
            type="request" if self.track == "requests" else "pageview",
            ts=hit.ts,
            received_at=hit.ts,
            event_id=new_event_id(),
            url=url,
            referrer=hit.get(_REFERER) or None,
            method=hit.method,
            status=hit.status,
            duration_ms=hit.duration_ms,
            user_agent=hit.get(_USER_AGENT, "")[:2048],  # type: ignore[index]
            dnt=hit.values[_DNT] == "1" or hit.values[_SEC_GPC] == "1",
        )
        address = client_address(hit.get(_REMOTE_ADDR), hit.get(_FORWARDED_FOR), self.settings.trusted_proxies)
        draft.set_address(address)
        if self._ctx_key != (salt, host):  # one worker thread: no lock needed
            self._ctx = SiteContext(
                site_id=self.context.site_id,
                domains=self.context.domains or (host,),  # the site's own host makes referrers internal
                respect_dnt=self.context.respect_dnt,
                drop_bots=self.context.drop_bots,
                salt=salt,
            )
            self._ctx_key = (salt, host)
        try:
            event = enrich(draft, self._ctx, self.steps)
        except Drop as drop:
            self.worker.stats[f"dropped_{drop.reason.value}"] += 1
            return
        self.sink.send(event)

    def _url_and_host(self, hit: Hit) -> tuple[str, str]:
        """The page's absolute URL and host name, from Django's ``build_absolute_uri()`` and
        ``get_host()`` (which raises DisallowedHost for a host not in ALLOWED_HOSTS: the job is
        counted as failed). Memoized per scheme, path, query and the META values get_host()
        reads, because a site has few hosts and its pages repeat. Only the worker thread calls
        this; failures are not cached. Settings are read when an entry is made (they do not
        change while a server runs)."""
        values = hit.values
        key = (hit.path, values[:_URL_KEYS], values[len(_META_KEYS) :])  # the latter: the scheme's
        found = self._urls.get(key)
        if found is None:
            seen = _SeenRequest(hit, self._keys)
            found = (seen.build_absolute_uri()[:8192], seen.get_host().rsplit(":", 1)[0].lower())
            if len(self._urls) >= _URL_CACHE_SIZE:
                self._urls.clear()  # crude but bounded; refilled from the pages that still come
            self._urls[key] = found
        return found
