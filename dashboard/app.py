"""The Dash app: built once per process, served by :func:`dashboard.views.forward`.

Dash runs on its own Flask instance but is never exposed directly: every request reaches it
through the Django view, which has already checked the login (or share link), computed the
request's :class:`~dashboard.access.Access`, and checked CSRF on callbacks (Dash sends
Django's CSRF cookie back as the ``X-CSRFToken`` header).
"""

from __future__ import annotations

import threading
from pathlib import Path
from urllib.parse import parse_qs, urlencode

from dash import Dash, Input, Output, ctx, html, no_update
from django.conf import settings

from dashboard import alerts, alerts_layout, goals, health, history, layout, live, panels
from dashboard.access import current

_lock = threading.Lock()
_app: Dash | None = None


def serve_layout() -> html.Div:
    return layout.shell(current())


def create_app() -> Dash:
    app = Dash(
        __name__,
        routes_pathname_prefix=layout.PREFIX,
        requests_pathname_prefix=layout.PREFIX,
        assets_folder=str(Path(__file__).parent / "assets"),
        serve_locally=True,  # a self-hosted product needs no CDN
        title="Footfall",
        update_title=None,  # no "Updating…" title flashing on every refresh
        suppress_callback_exceptions=True,  # page components appear with their page
        csrf_token_name=settings.CSRF_COOKIE_NAME,
        meta_tags=[{"name": "viewport", "content": "width=device-width, initial-scale=1"}],
    )
    app.layout = serve_layout
    _register_shell(app)
    live.register(app)
    history.register(app)
    goals.register(app)
    health.register(app)
    alerts.register(app)
    return app


def get_app() -> Dash:
    global _app
    with _lock:
        if _app is None:
            _app = create_app()
        return _app


def site_from_search(search: str | None) -> str | None:
    values = parse_qs((search or "").lstrip("?")).get("site")
    return values[0] if values else None


def _register_shell(app: Dash) -> None:
    @app.callback(
        Output("site", "value"),
        Output("url", "search"),
        Input("url", "search"),
        Input("site", "value"),
    )
    def sync_site(search: str | None, value: str | None) -> tuple:
        """The site in the address (``?site=``) and the picker follow each other."""
        access = current()
        if ctx.triggered_id == "site" and access.site(value):
            return no_update, "?" + urlencode({"site": value})
        wanted = access.site(site_from_search(search))
        if wanted is not None:
            return (wanted.site_id if wanted.site_id != value else no_update), no_update
        return no_update, no_update

    @app.callback(
        Output("page", "children"),
        Input("url", "pathname"),
    )
    def route(pathname: str | None) -> html.Div:
        access = current()
        if not access.sites:
            return layout.no_sites(access)
        page = layout.page_of(pathname)
        if page == "history":
            return layout.history_page(panels.conversion_panels())
        if page == "health":
            return layout.health_page() if access.can_see_health else layout.health_refused()
        if page == "alerts":
            return alerts_layout.alerts_page() if access.signed_in else alerts_layout.alerts_refused()
        return layout.live_page()

    @app.callback(
        *[Output(f"nav-{key}", "href") for key in layout.PAGES],
        *[Output(f"nav-{key}", "className") for key in layout.PAGES],
        Input("site", "value"),
        Input("url", "pathname"),
    )
    def nav(site_id: str | None, pathname: str | None) -> tuple:
        current_page = layout.page_of(pathname)
        hrefs = [layout.href(key, site_id if current().site(site_id) else None) for key in layout.PAGES]
        classes = ["nav-link active" if key == current_page else "nav-link" for key in layout.PAGES]
        return (*hrefs, *classes)
