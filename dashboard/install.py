"""The site page's installation check: the snippet to copy, the first and last events taken
for the site (source and page host), and its last refused events with the reasons and what to do.
Refreshed every few seconds, so "no event yet" turns into the first event while the user watches."""

from __future__ import annotations

import time

from dash import Dash, Input, Output, dcc, html

from dashboard.access import current
from dashboard.callbacks import Callbacks
from footfall.config import footfall_config
from query.installation import NO_EVENT_YET, installation, refusal_line, sighting_line

callbacks = Callbacks()
REFRESH_MS = 5_000


def page() -> html.Div:
    return html.Div(
        [
            dcc.Interval(id="install-tick", interval=REFRESH_MS),
            html.Div([html.H1("Installation")], className="page-head"),
            html.Section([html.H2("Events"), html.Div("Loading…", id="install-seen")], className="panel"),
            html.Section(
                [html.H2("Refused lately"), html.Ul(id="install-refused", className="install-refused")],
                className="panel",
            ),
            html.Section(
                [
                    html.H2("The tracker, in every page's <head>"),
                    _snippet("install-script"),
                    html.P(
                        "The integrity value pins this build of the tracker: after upgrading Footfall, copy the tag "
                        "again. To serve the tracker from your own domain, see docs/collector.md#your-own-domain.",
                        className="empty-note",
                    ),
                    html.H2("Or, for a Django site, the middleware"),
                    _snippet("install-middleware"),
                ],
                className="panel",
            ),
        ]
    )


def _snippet(id_: str) -> html.Div:
    return html.Div([html.Pre(id=id_, className="snippet"), dcc.Clipboard(target_id=id_)], className="snippet-box")


def refused() -> html.Div:
    text = "The installation check is for signed-in users granted the site."
    return html.Div([html.H2("Installation"), html.P(text)], className="empty", id="install-refused-page")


@callbacks.callback(
    Output("install-seen", "children"),
    Output("install-refused", "children"),
    Output("install-script", "children"),
    Output("install-middleware", "children"),
    Input("install-tick", "n_intervals"),
    Input("site", "value"),
)
def refresh(_tick: int | None, site_id: str | None) -> tuple:
    access = current()
    site = access.site(site_id)
    if site is None or not access.signed_in:
        return "Choose a site.", [], "", ""
    check = installation(site.site_id, footfall_config().public_url or access.base_url)
    now_ms = int(time.time() * 1000)
    if check.unreadable:
        seen: object = html.P(check.unreadable, className="alert", id="install-unreadable")
    elif check.events is None:
        seen = html.P(NO_EVENT_YET, id="install-no-event", className="empty-note")
    else:
        first, last = check.events
        seen = html.Ul(
            [
                html.Li(sighting_line("First event", first, now_ms), id="install-first"),
                html.Li(sighting_line("Last event", last, now_ms), id="install-last"),
            ]
        )
    rows = [html.Li(refusal_line(r, now_ms)) for r in (check.sightings.refused if check.sightings else [])]
    return seen, rows or [html.Li("None.")], check.script_tag, check.middleware_settings


def register(app: Dash) -> None:
    """Register the page's callbacks on ``app``."""
    callbacks.register(app)
