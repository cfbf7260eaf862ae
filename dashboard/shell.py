"""The frame around every page: site picker, navigation and who is signed in; its layout and its
callbacks, which keep the site in the address (``?site=``) and the picker in step, show the
page the path names (refused or empty when the request may not see it) and point the
navigation at the chosen site. Pages are addressed as ``/dashboard/<page>``."""

from __future__ import annotations

from urllib.parse import parse_qs, urlencode

from dash import Dash, Input, Output, ctx, dcc, html, no_update

from dashboard import alerts, conversion_panels, health, history, install, journeys, live, live_events, messages
from dashboard.access import Access, current
from dashboard.callbacks import Callbacks

callbacks = Callbacks()
PREFIX = "/dashboard/"
PAGES = {
    "live": "Live", "events": "Live events", "history": "History", "journeys": "Journeys", "install": "Installation",
    "health": "Health", "alerts": "Alerts",
}  # fmt: skip


def page_of(pathname: str | None) -> str:
    """The page a path names: ``/dashboard/history`` → ``history``; anything else → ``live``."""
    rest = (pathname or "").removeprefix(PREFIX).strip("/")
    return rest if rest in PAGES else "live"


def href(page: str, site_id: str | None) -> str:
    base = PREFIX if page == "live" else f"{PREFIX}{page}"
    return f"{base}?site={site_id}" if site_id else base


def site_from_search(search: str | None) -> str | None:
    values = parse_qs((search or "").lstrip("?")).get("site")
    return values[0] if values else None


# -- layout -------------------------------------------------------------------------------


def layout(access: Access) -> html.Div:
    """The frame of every page: site picker, navigation, who is signed in."""
    options = [
        {"label": f"{s.name} ({s.site_id})" if s.name != s.site_id else s.site_id, "value": s.site_id}
        for s in access.sites
    ]
    first = access.sites[0].site_id if access.sites else None
    if access.signed_in:
        who = html.Div(
            [
                html.Span(access.username, className="user"),
                # Signing out is a POST (Django's LogoutView); this page asks for it.
                html.A("Sign out", href=f"{PREFIX}logout/", className="link-button", id="sign-out"),
            ],
            className="who",
        )
    else:
        who = html.Span("Shared view · read-only", className="who shared")
    return html.Div(
        [
            dcc.Location(id="url", refresh=False),
            html.Header(
                [
                    html.A("Footfall", href=PREFIX, className="brand"),
                    dcc.Dropdown(
                        id="site",
                        options=options,
                        value=first,
                        clearable=False,
                        searchable=len(options) > 8,
                        className="site-picker",
                        placeholder="no site",
                    ),
                    html.Nav(
                        [
                            html.Span(
                                dcc.Link(label, id=f"nav-{key}", href=href(key, first), className="nav-link"),
                                hidden=key in ("events", "install", "health", "alerts") and not access.can_see_health,
                            )
                            for key, label in PAGES.items()
                        ],
                        className="nav",
                    ),
                    who,
                ],
                className="topbar",
            ),
            html.Main(id="page", className="page"),
        ],
        className="app",
    )


def no_sites(access: Access) -> html.Div:
    if access.shared_revoked and not access.signed_in:
        text = messages.SHARE_REVOKED
    else:
        text = messages.NO_SITES_STAFF if access.staff else messages.NO_SITES
    return html.Div([html.H2("Nothing to show yet"), html.P(text)], className="empty", id="no-sites")


# -- callbacks ----------------------------------------------------------------------------


@callbacks.callback(
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


@callbacks.callback(
    Output("page", "children"),
    Input("url", "pathname"),
)
def route(pathname: str | None) -> html.Div:
    access = current()
    if not access.sites:
        return no_sites(access)
    page = page_of(pathname)
    if page == "history":
        return history.page(conversion_panels.panels())
    if page == "journeys":
        return journeys.page()
    if page == "health":
        return health.page() if access.can_see_health else health.refused()
    if page == "alerts":
        return alerts.page() if access.signed_in else alerts.refused()
    if page == "events":
        return live_events.page(access.staff) if access.signed_in else live_events.refused()
    if page == "install":
        return install.page() if access.signed_in else install.refused()
    return live.page()


@callbacks.callback(
    *[Output(f"nav-{key}", "href") for key in PAGES],
    *[Output(f"nav-{key}", "className") for key in PAGES],
    Input("site", "value"),
    Input("url", "pathname"),
)
def nav(site_id: str | None, pathname: str | None) -> tuple:
    current_page = page_of(pathname)
    hrefs = [href(key, site_id if current().site(site_id) else None) for key in PAGES]
    classes = ["nav-link active" if key == current_page else "nav-link" for key in PAGES]
    return (*hrefs, *classes)


def register(app: Dash) -> None:
    """Register the frame's callbacks on ``app``."""
    callbacks.register(app)
