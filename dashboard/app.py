"""The Dash app: built once per process, served by :func:`dashboard.views.forward`.

Dash runs on its own Flask instance but is never exposed directly: every request reaches it
through the Django view, which has already checked the login (or share link), computed the
request's :class:`~dashboard.access.Access`, and checked CSRF on callbacks (Dash sends
Django's CSRF cookie back as the ``X-CSRFToken`` header). The frame (:mod:`dashboard.shell`)
and each page module register their own callbacks on the app built here.
"""

from __future__ import annotations

import threading
from pathlib import Path

from dash import Dash, html
from django.conf import settings

from dashboard import alerts, conversion_panels, health, history, install, journeys, live, shell
from dashboard.access import current

_lock = threading.Lock()
_app: Dash | None = None


def serve_layout() -> html.Div:
    return shell.layout(current())


def create_app() -> Dash:
    app = Dash(
        __name__,
        routes_pathname_prefix=shell.PREFIX,
        requests_pathname_prefix=shell.PREFIX,
        assets_folder=str(Path(__file__).parent / "assets"),
        serve_locally=True,  # a self-hosted product needs no CDN
        title="Footfall",
        update_title=None,  # no "Updating…" title flashing on every refresh
        suppress_callback_exceptions=True,  # page components appear with their page
        csrf_token_name=settings.CSRF_COOKIE_NAME,
        meta_tags=[{"name": "viewport", "content": "width=device-width, initial-scale=1"}],
    )
    app.layout = serve_layout
    for module in (shell, live, history, conversion_panels, journeys, health, alerts, install):
        module.register(app)
    return app


def get_app() -> Dash:
    global _app
    with _lock:
        if _app is None:
            _app = create_app()
        return _app
