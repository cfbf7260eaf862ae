"""The Live page: its layout and the callback that fills it from one query of the service every
few seconds.

Refreshes replace data in place (figures keep their ``uirevision``, tables their columns),
and a failed refresh keeps the last numbers on screen under an alert, so nothing flickers.
"""

from __future__ import annotations

import datetime as dt
import logging
from zoneinfo import ZoneInfo

from dash import Dash, Input, Output, dcc, html, no_update

from dashboard import figures, messages, tables
from dashboard.access import current, problem_for_viewer
from dashboard.callbacks import Callbacks
from dashboard.components import alert, card, graph, table
from query.runtime import get_service

log = logging.getLogger(__name__)
callbacks = Callbacks()
REFRESH_MS = 5_000
LIMIT = 10


# -- layout -------------------------------------------------------------------------------


def page() -> html.Div:
    small = {"page_size": 10, "style_as_list_view": True}
    return html.Div(
        [
            dcc.Interval(id="live-tick", interval=REFRESH_MS),
            html.Div(
                [
                    html.H1("Live"),
                    dcc.RadioItems(
                        id="live-minutes",
                        options=[{"label": "last 30 min", "value": 30}, {"label": "last 60 min", "value": 60}],
                        value=30,
                        inline=True,
                        className="segmented",
                    ),
                    html.Span("Loading live data…", id="live-status", className="status"),
                ],
                className="page-head",
            ),
            alert("live-error"),
            html.Div(
                [
                    card("Visitors now (last 5 min)", "live-concurrent", extra_class="accent"),
                    card("Page views", "live-pageviews", "live-pageviews-sub"),
                    card("Visitors", "live-visitors", "live-visitors-sub"),
                ],
                className="cards",
            ),
            html.P("", id="live-empty", className="empty-note", hidden=True),
            html.Section(
                [html.H2("Page views per minute"), graph("live-ppm", "Loading…")],
                className="panel",
            ),
            html.Div(
                [
                    html.Section(
                        [html.H2("Top pages"), table("live-top-pages", _columns("Page"), **small)],
                        className="panel",
                    ),
                    html.Section(
                        [html.H2("Top referrers"), table("live-top-refs", _columns("Referrer"), **small)],
                        className="panel",
                    ),
                ],
                className="grid-2",
            ),
            html.P(messages.OTHER_VALUES_NOTE, id="live-other-note", className="empty-note", hidden=True),
            html.Section(
                [
                    html.H2("Rising now"),
                    html.P(messages.NO_RISING, id="live-rising-empty", className="empty-note", hidden=True),
                    table(
                        "live-rising",
                        [
                            {"name": "", "id": "kind"},
                            {"name": "Page or referrer", "id": "value"},
                            {"name": "Last 10 min", "id": "recent", "type": "numeric"},
                            {"name": "Usual per 10 min", "id": "usual", "type": "numeric"},
                            {"name": "Surge (z)", "id": "z", "type": "numeric"},
                        ],
                        **small,
                    ),
                ],
                className="panel",
            ),
            html.Section(
                [html.H2("Which referrers drive traffic to which pages"), graph("live-flows", "Loading…")],
                className="panel",
            ),
        ],
        id="live-page",
    )


def _columns(title: str) -> list[dict[str, object]]:
    return [
        {"name": title, "id": "value"},
        {"name": "Page views", "id": "pageviews", "type": "numeric", "format": tables.INT},
        {"name": "Visitors", "id": "visitors", "type": "numeric", "format": tables.INT},
    ]


# -- callback -----------------------------------------------------------------------------

OUTPUTS = [
    Output("live-concurrent", "children"),
    Output("live-pageviews", "children"),
    Output("live-pageviews-sub", "children"),
    Output("live-visitors", "children"),
    Output("live-visitors-sub", "children"),
    Output("live-ppm", "figure"),
    Output("live-top-pages", "data"),
    Output("live-top-refs", "data"),
    Output("live-rising", "data"),
    Output("live-rising-empty", "hidden"),
    Output("live-flows", "figure"),
    Output("live-other-note", "hidden"),
    Output("live-empty", "children"),
    Output("live-empty", "hidden"),
    Output("live-status", "children"),
    Output("live-error", "children"),
    Output("live-error", "hidden"),
]


def render(live: dict, tz: ZoneInfo, site_id: str, now: dt.datetime) -> tuple:
    """The live page's outputs from the service's ``realtime`` answer (pure)."""
    minutes = live["minutes"]
    empty = not live["pageviews"]
    rising = tables.rising_rows(live)
    other = figures.has_other(
        [*live["top_pages"], *live["top_referrers"], *live["rising_pages"], *live["rising_referrers"]]
    ) or figures.has_other(live["flows"], "referrer", "page")
    return (
        figures.fmt_number(live["concurrent_visitors"]),
        figures.fmt_number(live["pageviews"]),
        f"in the last {minutes} min",
        figures.fmt_number(live["visitors"]),
        f"in the last {minutes} min (estimate ±1 %)",
        figures.pageviews_per_minute(live["pageviews_per_minute"], tz),
        tables.top_rows(live["top_pages"]),
        tables.top_rows(live["top_referrers"]),
        rising,
        bool(rising),
        figures.flow_sankey(live["flows"]),
        not other,
        messages.NO_LIVE_TRAFFIC.format(site=site_id) if empty else "",
        not empty,
        f"Updated {now.astimezone(tz):%H:%M:%S} ({tz.key}) · refreshes every {REFRESH_MS // 1000} s",
        "",
        True,
    )


def blank(problem: str) -> tuple:
    """The live page's outputs with every number and list cleared, and ``problem`` shown."""
    none = figures.empty_figure("No data")
    return ("—", "—", "", "—", "", none, [], [], [], True, none, True, "", True, "", problem, False)


@callbacks.callback(*OUTPUTS, Input("live-tick", "n_intervals"), Input("site", "value"), Input("live-minutes", "value"))
def refresh(_tick: int | None, site_id: str | None, minutes: int | None) -> tuple:
    access = current()
    site = access.site(site_id)
    if site is None:  # never allowed, or access ended (a revoked share link): show nothing more
        revoked = access.shared_revoked and not access.signed_in
        return blank(messages.SHARE_REVOKED if revoked else "Choose a site you have access to.")
    service = get_service()
    try:
        live = service.realtime(site.info, 60 if minutes == 60 else 30, LIMIT)
    except Exception as exc:
        log.exception("live view of %s failed", site.site_id)
        return (no_update,) * (len(OUTPUTS) - 2) + (
            problem_for_viewer(exc),
            False,
        )
    return render(live, ZoneInfo(site.tz), site.site_id, service.now())


def register(app: Dash) -> None:
    """Register the page's callbacks on ``app``."""
    callbacks.register(app)
