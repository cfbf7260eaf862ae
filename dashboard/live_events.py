"""The Live events page: a site's events as they reach the log, newest first, for a signed-in
user granted the site; staff may watch the refused events instead, each with its reason.

The page polls every ``POLL_MS`` (query/live_events.py: the process's one live reader, no
state per viewer) with the newest event time it holds, and puts what came after it on top;
it keeps the last ``KEEP_ROWS``. Pausing stops the polls; filters (type, path glob) start
the list afresh. Past the set rate a second the viewer gets 1 in N, and the status says so.
"""

from __future__ import annotations

import logging
from typing import Any

from dash import Dash, Input, Output, State, ctx, dcc, html, no_update

from dashboard.access import current
from dashboard.callbacks import Callbacks
from dashboard.components import alert
from query.live_events import EVENTS, REFUSED, BadFilter, line, poll

log = logging.getLogger(__name__)
callbacks = Callbacks()
POLL_MS = 500
KEEP_ROWS = 100
WAITING = "Waiting for events… (from now on)"


def page(staff: bool) -> html.Div:
    kinds = [{"label": "events", "value": EVENTS}, {"label": "refused events (staff)", "value": REFUSED}]
    return html.Div(
        [
            dcc.Interval(id="events-tick", interval=POLL_MS),
            dcc.Store(id="events-cursor"),
            dcc.Store(id="events-rows", data=[]),
            html.Div(
                [
                    html.H1("Live events"),
                    html.Button("Pause", id="events-pause", className="link-button", n_clicks=0),
                    html.Span(WAITING, id="events-status", className="status"),
                ],
                className="page-head",
            ),
            html.Div(
                [
                    dcc.Input(id="events-type", placeholder="type: pageview, signup…", debounce=True, maxLength=64),
                    dcc.Input(id="events-path", placeholder="path: /blog/*", debounce=True, maxLength=200),
                    dcc.RadioItems(
                        id="events-kind",
                        options=kinds,
                        value=EVENTS,
                        inline=True,
                        className="segmented",
                        style={} if staff else {"display": "none"},
                    ),
                ],
                className="filters",
            ),
            alert("events-error"),
            html.Ol(id="events-list", className="event-list"),
        ],
        id="events-page",
    )


def refused() -> html.Div:
    text = "Live events are for signed-in users granted the site."
    return html.Div([html.H2("Live events"), html.P(text)], className="empty", id="events-refused")


def render(rows: list[dict[str, Any]]) -> list[html.Li]:
    return [html.Li(line(row), className="event-row refused" if "reason" in row else "event-row") for row in rows]


@callbacks.callback(
    Output("events-tick", "disabled"),
    Output("events-pause", "children"),
    Input("events-pause", "n_clicks"),
)
def pause(clicks: int | None) -> tuple[bool, str]:
    paused = bool(clicks) and clicks % 2 == 1
    return paused, "Resume" if paused else "Pause"


@callbacks.callback(
    Output("events-list", "children"),
    Output("events-rows", "data"),
    Output("events-cursor", "data"),
    Output("events-status", "children"),
    Output("events-error", "children"),
    Output("events-error", "hidden"),
    Input("events-tick", "n_intervals"),
    Input("site", "value"),
    Input("events-type", "value"),
    Input("events-path", "value"),
    Input("events-kind", "value"),
    State("events-cursor", "data"),
    State("events-rows", "data"),
)
def refresh(
    _tick: int | None, site_id: str | None, event_type: str | None, path: str | None, kind: str | None,
    cursor: int | None, rows: list[dict[str, Any]] | None,
) -> tuple:  # fmt: skip
    access = current()
    if access.site(site_id) is None or not access.signed_in or site_id not in access.granted:
        return [], [], None, "", "Choose a site you are granted.", False
    if ctx.triggered_id != "events-tick":  # another site, filter or kind: start afresh
        cursor, rows = None, []
    kind = REFUSED if kind == REFUSED and access.staff else EVENTS
    try:
        answer = poll(str(site_id), kind, event_type, path, cursor if isinstance(cursor, int) else None)
    except BadFilter as exc:
        return [], [], None, "", str(exc), False
    except Exception:
        log.exception("live events of %s failed", site_id)
        return no_update, no_update, no_update, no_update, "The live events could not be read; retrying.", False
    if ctx.triggered_id == "events-tick" and not answer.rows and answer.cursor_us == cursor:
        # Nothing new: nothing to send or draw again (most polls, with twenty viewers a process).
        return no_update, no_update, no_update, no_update, no_update, no_update
    kept = (answer.rows + (rows or []))[:KEEP_ROWS]
    if answer.one_in > 1:
        status = f"Busy: showing 1 in {answer.one_in} events"
    elif kept:
        status = "Showing every event, newest first"
    else:
        status = WAITING
    return render(kept), kept, answer.cursor_us, status, "", True


def register(app: Dash) -> None:
    """Register the page's callbacks on ``app``."""
    callbacks.register(app)
