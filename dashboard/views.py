"""Django views of the dashboard: sign-in, share links, and the forwarder to the Dash app.

``/dashboard/…`` is served by :func:`forward`, which runs inside Django's middleware
(sessions, authentication, CSRF, security headers) and hands the request to the Dash
(Flask) WSGI app of this process, with the request's :class:`~dashboard.access.Access` in
the environ. So the dashboard is one more part of the Django project: ``runserver``,
gunicorn and test servers serve it alike, and nobody reaches Dash around the login.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import io
import json
import logging
from functools import cache
from math import ceil
from typing import Any

from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView, LogoutView, redirect_to_login
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.middleware.csrf import get_token
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from dashboard.access import ENVIRON_KEY, SESSION_SHARES, access_for, has_any_grant
from dashboard.models import ShareLink, SiteAccess
from footfall.config import DEVELOPMENT_ENV, footfall_config
from footfall.login_throttle import PAIR_FAILURES_PER_MINUTE, WAIT_ATTRIBUTE
from footfall.models import Site
from query.live_events import EVENTS, REFUSED, BadFilter, line, poll

# Headers that belong to one hop (PEP 3333 forbids them in WSGI apps) or that Django sets itself.
_SKIP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "content-length", "upgrade"}
# Same-origin code only; inline styles are what React and Plotly set on elements. Dash's two
# inline scripts (its config and the renderer's start) are allowed by their hashes.
CSP = (
    "default-src 'self'; script-src 'self' {hashes}; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
    "font-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; "
    "form-action 'self'"
)


# What the `dashboard` extra installs (Werkzeug comes with Dash's Flask); the rest of the server
# runs without them, so they are imported when the dashboard is first asked for.
EXTRA_MODULES = ("dash", "plotly", "werkzeug")


@cache
def missing_extra() -> str | None:
    """The first module of the ``dashboard`` extra that cannot be imported, or None when all can."""
    for module in EXTRA_MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError:
            return module
    return None


@cache
def extra_requirements(extra: str = "dashboard") -> list[str]:
    """The requirements the installed ``footfall`` distribution lists for ``extra`` (e.g.
    ``dash<5,>=3``); empty when the distribution's metadata cannot be found.

    The page names them rather than ``footfall[dashboard]``: ``footfall`` is no name this
    project holds on PyPI, and pip would install whatever was published under it.
    """
    try:
        listed = importlib.metadata.requires("footfall") or []
    except importlib.metadata.PackageNotFoundError:
        return []
    # Core metadata writes an extra's marker as `extra == "name"` (PEP 685 normalizes the name).
    wanted = f'extra == "{extra}"'
    return [spec.strip().replace(" ", "") for spec, _, marker in (r.partition(";") for r in listed) if wanted in marker]


class ThrottledAuthenticationForm(AuthenticationForm):
    """Django's sign-in form, saying so when an attempt was refused by the sign-in throttle."""

    def clean(self) -> dict[str, Any]:
        try:
            return super().clean()
        except ValidationError:
            wait = getattr(self.request, WAIT_ATTRIBUTE, None)
            if wait is None:
                raise
            raise ValidationError(
                f"Too many failed sign-ins for this account from this address (at most "
                f"{PAIR_FAILURES_PER_MINUTE} a minute), or from this address. Try again in {ceil(wait)} seconds.",
                code="throttled",
            ) from None


class DashboardLoginView(LoginView):
    template_name = "dashboard/login.html"
    redirect_authenticated_user = True
    authentication_form = ThrottledAuthenticationForm

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        # The local demo's hint names a development script: shown in development mode only.
        return {**super().get_context_data(**kwargs), "development": footfall_config().environment == DEVELOPMENT_ENV}

    def form_invalid(self, form: AuthenticationForm) -> HttpResponse:
        response = super().form_invalid(form)
        if form.has_error(NON_FIELD_ERRORS, "throttled"):
            response.status_code = 429
            response["Retry-After"] = str(ceil(getattr(self.request, WAIT_ATTRIBUTE)))
        return response


class DashboardLogoutView(LogoutView):
    """POST signs out (Django's rule: a link must not be able to); GET asks for the POST."""

    def get(self, request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        return render(request, "dashboard/logout.html")


@never_cache
def share(request: HttpRequest, token: str) -> HttpResponse:
    """Open a share link: remember it in this browser's session, then show its site."""
    link = ShareLink.resolve(token)
    if link is None:
        return render(request, "dashboard/share_invalid.html", status=404)
    opened = [i for i in request.session.get(SESSION_SHARES, []) if isinstance(i, int)]
    if link.pk not in opened:
        request.session[SESSION_SHARES] = [*opened, link.pk]
    return redirect(f"/dashboard/?site={link.site_id}")


CALLBACK_ROUTE = "_dash-update-component"


def is_callback_body(body: bytes) -> bool:
    """Whether ``body`` has the shape of a Dash callback request: a JSON object naming its
    ``output`` (a string) and its ``inputs`` (a list)."""
    try:
        payload = json.loads(body)
    except ValueError:
        return False
    return (
        isinstance(payload, dict) and isinstance(payload.get("output"), str) and isinstance(payload.get("inputs"), list)
    )


def _is_page(request: HttpRequest, rest: str) -> bool:
    """A page of the app (not one of Dash's own ``_dash-…`` routes or assets)."""
    return request.method == "GET" and not rest.startswith(("_", "assets/"))


def forward(request: HttpRequest, rest: str = "") -> HttpResponse:
    """Serve ``/dashboard/<rest>`` from the Dash app, for signed-in users and share-link holders;
    503 with what to install when the server was installed without the ``dashboard`` extra."""
    missing = missing_extra()
    if missing is not None:
        context = {"module": missing, "requirements": extra_requirements()}
        return render(request, "dashboard/not_installed.html", context, status=503)
    if not has_any_grant(request):
        if _is_page(request, rest):
            return redirect_to_login(request.get_full_path())
        return JsonResponse({"error": "sign in to use the dashboard"}, status=403)
    if rest == CALLBACK_ROUTE and request.method == "POST" and not is_callback_body(request.body):
        # Dash would raise on it and log an ERROR with a traceback for each such request.
        return JsonResponse({"error": "a malformed callback request"}, status=400)
    from werkzeug.test import run_wsgi_app

    from dashboard.app import get_app  # Dash is imported on first use, not when Django starts

    app = get_app()
    get_token(request)  # Dash's callbacks send Django's CSRF cookie back as X-CSRFToken
    body = request.body
    environ = {
        **request.META,
        "wsgi.input": io.BytesIO(body),
        "CONTENT_LENGTH": str(len(body)),
        ENVIRON_KEY: access_for(request),
    }
    app_iter, status, headers = run_wsgi_app(app.server.wsgi_app, environ, buffered=True)
    try:
        content = b"".join(app_iter)
    finally:
        if hasattr(app_iter, "close"):
            app_iter.close()
    response = HttpResponse(content, status=int(status.split(" ", 1)[0]))
    for name, value in headers.items():
        if name.lower() not in _SKIP_HEADERS:
            response[name] = value
    if response.get("Content-Type", "").startswith("text/html"):
        response["Content-Security-Policy"] = CSP.format(hashes=" ".join(app.csp_hashes()))
        response["Cache-Control"] = "no-store"
    response["X-Content-Type-Options"] = "nosniff"
    return response


log = logging.getLogger(__name__)


@never_cache
@require_GET
def live_events_poll(request: HttpRequest) -> JsonResponse:
    """``GET /dashboard/events/poll?site=&kind=&type=&path=&cursor=``: the Live events page's poll
    (assets/live_events.js). A signed-in user granted the site gets the events after ``cursor``,
    newest first, as lines of text; ``kind=refused`` (the refused events) is for staff only."""
    user = request.user
    if not user.is_authenticated:
        return JsonResponse({"error": "Sign in to watch live events."}, status=403)
    site_id, staff = request.GET.get("site", ""), bool(user.is_staff or user.is_superuser)
    granted = (
        Site.objects.filter(site_id=site_id).exists()
        if staff
        else SiteAccess.objects.filter(user=user, site_id=site_id).exists()
    )
    if not granted:
        return JsonResponse({"error": "Choose a site you are granted."}, status=403)
    kind = REFUSED if request.GET.get("kind") == REFUSED and staff else EVENTS
    raw_cursor = request.GET.get("cursor")
    if raw_cursor is not None and not raw_cursor.isdigit():
        return JsonResponse({"error": "cursor: expected the number the last poll answered"}, status=400)
    try:
        answer = poll(site_id, kind, request.GET.get("type"), request.GET.get("path"),
                      int(raw_cursor) if raw_cursor is not None else None)  # fmt: skip
    except BadFilter as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    except Exception:
        log.exception("live events of %s failed", site_id)
        return JsonResponse({"error": "The live events could not be read; retrying."}, status=503)
    rows = [{"line": line(row), "refused": "reason" in row} for row in answer.rows]
    return JsonResponse({"rows": rows, "cursor": answer.cursor_us, "one_in": answer.one_in})
