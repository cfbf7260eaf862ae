"""The dashboard's layout: the page shell and the live, history and health pages (the
Alerts page is :mod:`dashboard.alerts_layout`).

Pure component trees (no queries); callbacks fill them. Everything from traffic is placed as
a component's text or a DataTable cell, both rendered as text by React.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

from dash import dash_table, dcc, html
from dash.development.base_component import Component

from dashboard import messages, tables
from dashboard.access import Access
from dashboard.figures import METRIC_LABELS, empty_figure
from dashboard.ranges import PRESET_LABELS

# DataTable renders every cell as plain text, which is what attacker-controlled values need;
# Dash 4 suggests dash-ag-grid instead, an extra dependency this dashboard does not need yet.
warnings.filterwarnings("ignore", message=r"\s*The dash_table.DataTable will be removed", category=DeprecationWarning)

PREFIX = "/dashboard/"
PAGES = {"live": "Live", "history": "History", "health": "Health", "alerts": "Alerts"}
LIVE_REFRESH_MS = 5_000
HEALTH_REFRESH_MS = 15_000
GRAPH_CONFIG = {"displayModeBar": False, "responsive": True}

TABLE_STYLE = {
    "style_table": {"overflowX": "auto"},
    "style_cell": {
        "fontFamily": "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif",
        "fontSize": "13px",
        "padding": "6px 8px",
        "textAlign": "left",
        "whiteSpace": "normal",
        "height": "auto",
        "border": "none",
        "borderBottom": "1px solid #e2e8f0",
    },
    "style_cell_conditional": [{"if": {"column_id": "value"}, "wordBreak": "break-all", "minWidth": "140px"}],
    "style_header": {"fontWeight": "600", "backgroundColor": "#f8fafc", "borderBottom": "1px solid #cbd5e1"},
    "style_data_conditional": [{"if": {"state": "active"}, "backgroundColor": "#dbeafe", "border": "none"}],
}


def page_of(pathname: str | None) -> str:
    """The page a path names: ``/dashboard/history`` → ``history``; anything else → ``live``."""
    rest = (pathname or "").removeprefix(PREFIX).strip("/")
    return rest if rest in PAGES else "live"


def href(page: str, site_id: str | None) -> str:
    base = PREFIX if page == "live" else f"{PREFIX}{page}"
    return f"{base}?site={site_id}" if site_id else base


def table(table_id: str, columns: list[dict[str, object]], **extra: object) -> dash_table.DataTable:
    options = {"cell_selectable": False, **TABLE_STYLE, **extra}
    return dash_table.DataTable(id=table_id, columns=columns, data=[], **options)


def card(label: str, value_id: str, sub_id: str | None = None, extra_class: str = "") -> html.Div:
    children = [html.Div(label, className="card-label"), html.Div("…", id=value_id, className="card-value")]
    if sub_id:
        children.append(html.Div("", id=sub_id, className="card-sub"))
    return html.Div(children, className=f"card {extra_class}".strip())


def filter_bar(name: str, clear_text: str) -> html.Div:
    """A bar, hidden until a filter is on, naming it (``{name}-label``) with a button that
    clears it (``{name}-clear``); the bar's id is ``{name}-bar``."""
    return html.Div(
        [html.Span("", id=f"{name}-label"), html.Button(clear_text, id=f"{name}-clear", className="link-button")],
        id=f"{name}-bar",
        className="filter-bar",
        hidden=True,
    )


def alert(alert_id: str) -> html.Div:
    return html.Div(id=alert_id, className="alert", role="alert", hidden=True)


def shell(access: Access) -> html.Div:
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
                                hidden=key in ("health", "alerts") and not access.can_see_health,
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


# -- live ---------------------------------------------------------------------------------


def live_page() -> html.Div:
    small = {"page_size": 10, "style_as_list_view": True}
    return html.Div(
        [
            dcc.Interval(id="live-tick", interval=LIVE_REFRESH_MS),
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
                [
                    html.H2("Page views per minute"),
                    dcc.Graph(id="live-ppm", figure=empty_figure("Loading…"), config=GRAPH_CONFIG),
                ],
                className="panel",
            ),
            html.Div(
                [
                    html.Section(
                        [html.H2("Top pages"), table("live-top-pages", _live_columns("Page"), **small)],
                        className="panel",
                    ),
                    html.Section(
                        [html.H2("Top referrers"), table("live-top-refs", _live_columns("Referrer"), **small)],
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
                [
                    html.H2("Which referrers drive traffic to which pages"),
                    dcc.Graph(id="live-flows", figure=empty_figure("Loading…"), config=GRAPH_CONFIG),
                ],
                className="panel",
            ),
        ],
        id="live-page",
    )


def _live_columns(title: str) -> list[dict[str, object]]:
    return [
        {"name": title, "id": "value"},
        {"name": "Page views", "id": "pageviews", "type": "numeric", "format": tables.INT},
        {"name": "Visitors", "id": "visitors", "type": "numeric", "format": tables.INT},
    ]


# -- history ------------------------------------------------------------------------------


def history_page(extra: Sequence[Component] = ()) -> html.Div:
    """The history page; ``extra`` sections go under the breakdown (the conversion panels of
    :mod:`dashboard.panels`, which builds on this module's tables)."""
    return html.Div(
        [
            dcc.Store(id="hist-range"),
            dcc.Store(id="hist-filter"),
            dcc.Store(id="hist-goal-filter"),  # {"goal_id", "name"} of the goal clicked in the Goals panel
            html.Div(
                [
                    html.H1("History"),
                    dcc.RadioItems(
                        id="hist-preset",
                        options=[{"label": v, "value": k} for k, v in PRESET_LABELS.items()],
                        value="7d",
                        inline=True,
                        className="segmented",
                    ),
                    dcc.DatePickerRange(
                        id="hist-dates",
                        display_format="YYYY-MM-DD",
                        first_day_of_week=1,
                        minimum_nights=0,
                        className="dates",
                        updatemode="bothdates",
                    ),
                    dcc.Checklist(
                        id="hist-compare",
                        options=[{"label": "compare with the previous period", "value": "on"}],
                        value=["on"],
                        className="compare",
                    ),
                ],
                className="page-head wrap",
            ),
            html.Div("", id="hist-range-label", className="status"),
            alert("hist-error"),
            dcc.Loading(
                html.Div([_metric_card(m) for m in METRIC_LABELS], className="cards five", id="hist-cards"),
                type="dot",
                delay_show=300,
            ),
            filter_bar("hist-filter", "Clear filter"),
            html.Section(
                [
                    dcc.RadioItems(
                        id="hist-metric",
                        options=[{"label": v, "value": k} for k, v in METRIC_LABELS.items()],
                        value="pageviews",
                        inline=True,
                        className="segmented",
                    ),
                    dcc.Loading(
                        dcc.Graph(id="hist-series", figure=empty_figure("Loading…"), config=GRAPH_CONFIG),
                        type="dot",
                        delay_show=300,
                    ),
                ],
                className="panel",
            ),
            html.Ul(id="hist-notes", className="notes"),
            html.Section(
                [
                    html.Div(
                        [
                            html.H2("Breakdown"),
                            html.Span("Click a row to filter by it.", className="hint"),
                            html.Button("Download CSV", id="hist-csv-button", className="button"),
                            dcc.Download(id="hist-csv"),
                        ],
                        className="panel-head",
                    ),
                    # Pills that wrap, rather than tabs: twelve dimensions must fit a phone too.
                    dcc.RadioItems(
                        id="hist-dim",
                        options=[{"label": v, "value": k} for k, v in tables.DIMENSION_TITLES.items()],
                        value="pages",
                        inline=True,
                        className="chips",
                    ),
                    filter_bar("hist-goal", "Show all visitors"),
                    html.P("", id="hist-table-note", className="empty-note", hidden=True),
                    dcc.Loading(
                        table(
                            "hist-table",
                            tables.breakdown_columns("pages"),
                            page_size=15,
                            style_as_list_view=True,
                            sort_action="native",
                            cell_selectable=True,
                        ),
                        type="dot",
                        delay_show=300,
                    ),
                    html.Div("", id="hist-table-caption", className="status"),
                ],
                className="panel",
            ),
            *extra,
        ],
        id="history-page",
    )


def _metric_card(metric: str) -> html.Div:
    return html.Div(
        [
            html.Div(METRIC_LABELS[metric], className="card-label"),
            html.Div("…", id=f"hist-value-{metric}", className="card-value"),
            html.Div("", id=f"hist-change-{metric}", className="card-sub"),
        ],
        className="card",
    )


# -- health -------------------------------------------------------------------------------


def health_page() -> html.Div:
    return html.Div(
        [
            dcc.Interval(id="health-tick", interval=HEALTH_REFRESH_MS),
            html.Div(
                [html.H1("Pipeline health"), html.Span("Loading…", id="health-status", className="status")],
                className="page-head",
            ),
            alert("health-error"),
            html.Div(
                [
                    card("Last event seen (this site)", "health-last-event", "health-last-event-sub"),
                    card("Realtime consumer lag", "health-rt-lag", "health-rt-lag-sub"),
                    card("Archiver lag", "health-archive-lag", "health-archive-lag-sub"),
                    card("Invalid events", "health-invalid", "health-invalid-sub"),
                ],
                className="cards",
            ),
            html.Section(
                [
                    html.H2("Last rollup per day"),
                    html.P(messages.NO_ROLLUPS, id="health-rollups-empty", className="empty-note", hidden=True),
                    table(
                        "health-rollups",
                        [
                            {"name": "Day", "id": "day"},
                            {"name": "Status", "id": "status"},
                            {"name": "Rolled up at (site time)", "id": "computed_at"},
                            {"name": "Events read", "id": "events_read", "type": "numeric", "format": tables.INT},
                            {"name": "Page views", "id": "pageviews", "type": "numeric", "format": tables.INT},
                            {"name": "Spark", "id": "spark_master"},
                        ],
                        page_size=14,
                    ),
                ],
                className="panel",
            ),
            html.Section(
                [
                    html.H2("Realtime vs batch drift (reconciliation)"),
                    html.P(messages.NO_DRIFT, id="health-drift-empty", className="empty-note", hidden=True),
                    table(
                        "health-drift",
                        [
                            {"name": "Day", "id": "day"},
                            {"name": "Realtime page views", "id": "realtime_pageviews", "type": "numeric"},
                            {"name": "Batch page views", "id": "batch_pageviews", "type": "numeric"},
                            {"name": "Page views drift %", "id": "pageviews_drift_pct", "type": "numeric"},
                            {"name": "Visitors drift %", "id": "visitors_drift_pct", "type": "numeric"},
                            {"name": "Realtime coverage %", "id": "coverage_pct", "type": "numeric"},
                            {"name": "Checked at", "id": "checked_at"},
                        ],
                        page_size=14,
                    ),
                ],
                className="panel",
            ),
            html.Section(
                [
                    html.H2("Invalid events by reason (all sites)"),
                    html.P(messages.NO_INVALID, id="health-invalid-empty", className="empty-note", hidden=True),
                    table(
                        "health-invalid-table",
                        [{"name": "Reason", "id": "reason"}, {"name": "Events", "id": "events", "type": "numeric"}],
                    ),
                ],
                className="panel",
            ),
        ],
        id="health-page",
    )


def health_refused() -> html.Div:
    return html.Div([html.H2("Health"), html.P(messages.HEALTH_SIGNED_IN)], className="empty")
