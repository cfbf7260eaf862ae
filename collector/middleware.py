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

The host's response is returned untouched. On the request thread the middleware only
decides whether the request is wanted and copies the dozen request values an event needs
(a few microseconds); host validation, URL building, the client address, enrichment,
encoding and delivery run on a background thread (see :class:`~collector.sink.BackgroundWorker`).
Any failure is caught, counted and logged at most once a minute — never raised. These
events are best effort by design: the host's response never waits for them, so a full
queue (Kafka and the spool both failing for long) drops and counts them; beacons, which
answer 202 only once their event is queued or spooled, have the no-loss guarantee.

:class:`BeaconMiddleware` is a second, optional middleware for the collector's own site:
it answers the beacon endpoints ahead of the rest of the middleware stack.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import redis
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured, PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.urls import NoReverseMatch, Resolver404, get_script_prefix, resolve, reverse

from collector.beacon import client_address
from collector.enrich.pipeline import Draft, Drop, SiteContext, Step, enrich
from collector.enrich.steps import DEFAULT_STEPS, warm_up
from collector.runtime import footfall_config
from collector.salts import SALT_POLICIES, SaltStore, salt_day
from collector.sink import BackgroundWorker, KafkaSink, get_sink
from footfall.events import new_event_id

DEFAULT_EXCLUDES = (r"^/static/", r"^/media/", r"^/admin/", r"^/favicon\.ico$", r"^/(health|healthz|ready|readyz)/?$")
TRACK_MODES = ("pageviews", "requests")


# What an event needs from a request's META, copied on the request thread (the request
# object itself must not outlive the request). Copied as a tuple in this order (one C-level
# map, ~4x cheaper than a dict comprehension over the keys); the first _URL_KEYS are the ones
# get_host() and build_absolute_uri() read. Each middleware appends the keys Django's
# request.scheme reads (see _scheme_keys), so the scheme is resolved on the worker thread too.
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
    names, if set, and the WSGI server's ``wsgi.url_scheme``. Copying them (two dict lookups)
    and letting the worker thread ask Django costs the request thread a fifth of what asking
    there did (``bench.collector_instructions``: ~4,700 instructions per page view). Read when
    the middleware is built, like its other settings; a malformed setting is an error then,
    not in every request."""
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
        self._excluded_paths: dict[str, bool] = {}  # see _excluded
        self.sample_rate = float(options.get("SAMPLE_RATE", 1.0))
        if not 0.0 < self.sample_rate <= 1.0:
            raise ImproperlyConfigured("FOOTFALL_COLLECTOR['SAMPLE_RATE'] must be in (0, 1]")
        self.salt_policy: str = options.get("SALT_POLICY", "daily")
        if self.salt_policy not in SALT_POLICIES:
            raise ImproperlyConfigured(f"FOOTFALL_COLLECTOR['SALT_POLICY'] must be one of {SALT_POLICIES}")
        self.timezone: str = options.get("TIMEZONE", "UTC")
        self._keys = _META_KEYS + _scheme_keys()  # what _capture copies from META
        self._missing = (_MISSING,) * len(self._keys)
        # The enrichment steps every event goes through (see collector.enrich.steps for their
        # order rules). An attribute rather than the module constant so that a measurement
        # (bench.collector_instructions) can run the same middleware without one of them.
        # Each job reads it when it runs on the worker thread, up to a batch interval after
        # its request: a change applies to the jobs still queued too, so it is a setting for
        # a whole measurement phase, not per request.
        self.steps: tuple[Step, ...] = DEFAULT_STEPS
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
        self._ctx_key: tuple[bytes, str] | None = None  # the worker's last (salt, host) and its context
        self._ctx = self.context
        self._urls: dict[tuple[str, tuple[object, ...], tuple[object, ...]], tuple[str, str]] = {}  # see _url_and_host
        # Middleware is built when the server loads the app: pay the enrichment tables' loading
        # now (pure data, safe before a fork) rather than in the first page views.
        warm_up()

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
        """Whether ``path`` matches an excluded pattern, memoized per path: the five default
        patterns cost ~3 µs per request and a site's paths repeat. Bounded like the worker's
        URL memo (a crawler's random paths only refill it); a race between request threads
        at worst computes an entry twice, with the same answer."""
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

    def _deliver(self, hit: Hit) -> None:
        """On the worker thread: build, salt, enrich, send (failures are counted by the worker)."""
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
            dnt=hit.values[_DNT] == "1" or hit.values[_SEC_GPC] == "1",  # as meta_asks_not_to_track
        )
        draft.set_address(client_address(hit.get(_REMOTE_ADDR), hit.get(_FORWARDED_FOR), self.cfg.trusted_proxies))
        if self._salts is None:
            self._salts = SaltStore(redis.Redis.from_url(self.cfg.redis_url, socket_timeout=2))
        salt = self._salts.salt(salt_day(draft.ts, self.salt_policy, self.timezone))
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
        (self.sink or get_sink(self.cfg)).send(event)

    def _url_and_host(self, hit: Hit) -> tuple[str, str]:
        """The page's absolute URL and host name, from Django's ``build_absolute_uri()`` and
        ``get_host()`` (which raises DisallowedHost for a host not in ALLOWED_HOSTS: the job is
        counted as failed). Memoized per scheme, path, query and the META values get_host()
        reads: a site has few hosts and its pages repeat, and host validation plus URL quoting
        were a third of the worker's time per event. Only the worker thread calls this;
        failures are not cached. Settings are read when an entry is made (they do not change
        while a server runs)."""
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


class BeaconMiddleware:
    """Answer the beacon endpoints (``POST /collect``, ``GET /p.gif``) ahead of the rest of the
    middleware stack. For the collector's own site; a host app tracked by
    :class:`ClickstreamMiddleware` does not need it. Install it right after
    ``SecurityMiddleware``, so HTTPS redirects and HSTS apply to beacons as before::

        MIDDLEWARE = ["django.middleware.security.SecurityMiddleware", "collector.middleware.BeaconMiddleware", ...]

    Why: a beacon is a cookie-less, credential-less, CSRF-exempt request whose view needs
    nothing from sessions, authentication, messages, CSRF or clickjacking protection, yet
    passing through them and URL resolution cost about as much server time as the
    beacon's own work (validation, enrichment, produce). The views called here are the
    very ones the URLconf routes those paths to, so every answer is the same: 202, 400,
    403, 405, 413, 429, 503 with their reasons and CORS headers. Like ``CommonMiddleware``
    it checks the Host header against ``ALLOWED_HOSTS`` (400) and ``DISALLOWED_USER_AGENTS``
    (403), and it sets ``Content-Length``. What the skipped middleware would have added and
    these answers do not need: ``X-Frame-Options`` (nothing to frame in a JSON or GIF
    answer) and ``Vary: Cookie`` (no cookie is read). The paths are looked up in the URLconf
    on the first request (``reverse("collect")``, ``reverse("pixel")``); a site that does
    not route them there gets every request passed through unchanged.
    """

    ROUTE_NAMES = ("collect", "pixel")

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self._routes: dict[str, Callable[[HttpRequest], HttpResponse]] | None = None
        self._check_agents = "django.middleware.common.CommonMiddleware" in settings.MIDDLEWARE
        warm_up()  # built at server start: the first beacons should not load the enrichment tables

    def __call__(self, request: HttpRequest) -> HttpResponse:
        routes = self._routes
        if routes is None:  # the URLconf is only usable once a request is being handled
            routes = self._routes = self._find_routes()
        view = routes.get(request.path_info)
        if view is None:
            return self.get_response(request)
        request.get_host()  # DisallowedHost: Django answers 400, as when CommonMiddleware asks
        if self._check_agents:
            user_agent = request.META.get("HTTP_USER_AGENT")
            if user_agent is not None and any(p.search(user_agent) for p in settings.DISALLOWED_USER_AGENTS):
                raise PermissionDenied("Forbidden user agent")
        response = view(request)
        # As CommonMiddleware does. Without it gunicorn frames the answer chunked: its body
        # and the closing chunk go out as two more TCP segments, which cost the server more
        # than the view's own validation and enrichment (bench/README.md, sixth round).
        if not response.streaming and not response.has_header("Content-Length"):
            response.headers["Content-Length"] = str(len(response.content))
        return response

    def _find_routes(self) -> dict[str, Callable[[HttpRequest], HttpResponse]]:
        """path_info -> view for the beacon views the URLconf routes (by name, at its root or
        under a prefix); nothing for a name it routes elsewhere or not at all."""
        from collector import views  # the views import models: not before the app registry is ready

        wanted = {"collect": views.collect, "pixel": views.pixel}
        routes: dict[str, Callable[[HttpRequest], HttpResponse]] = {}
        prefix = get_script_prefix()
        for name in self.ROUTE_NAMES:
            try:
                path_info = "/" + reverse(name).removeprefix(prefix)
                match = resolve(path_info)
            except (NoReverseMatch, Resolver404):
                continue
            if match.func is wanted[name] and not match.args and not match.kwargs:
                routes[path_info] = match.func
        return routes
