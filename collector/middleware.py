"""``BeaconMiddleware``: answer the collector's beacon endpoints ahead of the rest of the stack.

A host site tracked with Footfall installs :class:`footfall_capture.middleware.ClickstreamMiddleware`
instead; this one belongs to the Footfall server.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.urls import NoReverseMatch, Resolver404, get_script_prefix, resolve, reverse

from footfall_capture.enrich.steps import warm_up


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
        # and the closing chunk go out as two more TCP segments.
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
