"""The Live events page: a site's events as they reach the log, newest first, for a signed-in
user granted the site; staff may watch the refused events instead, each with its reason.

Its layout is Dash's; its polling is not. ``assets/live_events.js`` asks ``events/poll``
(:func:`dashboard.views.live_events_poll`, a plain Django view over query/live_events.py)
every 500 ms with the newest event time it holds and puts what came after it on top, as text;
it keeps the last 100. A Dash callback per poll cost a viewer's process ~40 framework round
trips a second per twenty viewers, which pushed the time from send to screen past a second.
Pausing stops the polls; changing the site or a filter starts the list afresh. Past the set
rate a second the viewer gets 1 in N, and the status says so.
"""

from __future__ import annotations

from dash import dcc, html

from dashboard.components import alert
from query.live_events import EVENTS, REFUSED

WAITING = "Waiting for events… (from now on)"


def page(staff: bool) -> html.Div:
    kinds = [{"label": "events", "value": EVENTS}, {"label": "refused events (staff)", "value": REFUSED}]
    return html.Div(
        [
            html.Div(
                [
                    html.H1("Live events"),
                    html.Button("Pause", id="events-pause", className="link-button"),
                    html.Span(WAITING, id="events-status", className="status", **{"data-waiting": WAITING}),
                ],
                className="page-head",
            ),
            html.Div(
                [
                    dcc.Input(id="events-type", placeholder="type: pageview, signup…", maxLength=64),
                    dcc.Input(id="events-path", placeholder="path: /blog/*", maxLength=200),
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
