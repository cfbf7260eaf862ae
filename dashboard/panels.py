"""The history view's conversion panels: goals, funnels and one custom event's properties.

Pure component trees (no queries), like :mod:`dashboard.layout`, which places them on the
history page (:func:`dashboard.layout.history_page`'s ``extra``); :mod:`dashboard.goals`
fills them. Names and values from traffic only ever become a component's text or a
DataTable cell.
"""

from __future__ import annotations

from dash import dcc, html

from dashboard import conversions
from dashboard.figures import empty_figure
from dashboard.layout import GRAPH_CONFIG
from dashboard.layout import table as _table


def _graph(graph_id: str, message: str) -> dcc.Graph:
    return dcc.Graph(id=graph_id, figure=empty_figure(message), config=GRAPH_CONFIG)


def _loading(component: object) -> dcc.Loading:
    """A dot while the component waits for a slow query (the history page's other panels' look)."""
    return dcc.Loading(component, type="dot", delay_show=300)


LIST: dict[str, object] = {"style_as_list_view": True, "sort_action": "native"}


def conversion_panels() -> list[html.Section]:
    """The panels placed under the breakdown of the history page, in order."""
    return [event_properties_panel(), goals_panel(), funnel_panel()]


def event_properties_panel() -> html.Section:
    """Shown under the breakdown once a custom event's row is clicked."""
    return html.Section(
        [
            dcc.Store(id="hist-event"),
            html.Div(
                [
                    html.H2(["Properties of ", html.Span("", id="hist-event-name", className="value-text")]),
                    html.Button("Close", id="hist-event-close", className="link-button"),
                ],
                className="panel-head",
            ),
            dcc.Dropdown(id="hist-prop", options=[], clearable=False, placeholder="property", className="picker"),
            html.P("", id="hist-prop-note", className="empty-note", hidden=True),
            _loading(_table("hist-prop-table", conversions.PROPERTY_COLUMNS, page_size=10, **LIST)),
            html.Div("", id="hist-prop-caption", className="status"),
        ],
        id="hist-event-panel",
        className="panel",
        hidden=True,
    )


def goals_panel() -> html.Section:
    return html.Section(
        [
            html.Div(
                [
                    html.H2("Goals"),
                    html.Span("Click a goal to see it per day and filter the breakdown by it.", className="hint"),
                    html.Span([], id="hist-goals-admin", className="admin-links"),
                ],
                className="panel-head",
            ),
            html.P("", id="hist-goals-empty", className="empty-note", hidden=True),
            _loading(_table("hist-goals", conversions.GOAL_COLUMNS, page_size=10, cell_selectable=True, **LIST)),
            html.Div("", id="hist-goals-caption", className="status"),
            html.Div(
                [html.H3("", id="hist-goal-title"), _graph("hist-goal-series", "")],
                id="hist-goal-detail",
                hidden=True,
            ),
        ],
        className="panel",
        id="hist-goals-panel",
    )


def funnel_panel() -> html.Section:
    return html.Section(
        [
            html.Div(
                [
                    html.H2("Funnel"),
                    dcc.Dropdown(
                        id="hist-funnel", options=[], clearable=False, placeholder="funnel", className="picker"
                    ),
                    html.Span([], id="hist-funnels-admin", className="admin-links"),
                ],
                className="panel-head",
            ),
            html.P("", id="hist-funnel-empty", className="empty-note", hidden=True),
            html.Div(
                [
                    html.Div("", id="hist-funnel-caption", className="status"),
                    _loading(_graph("hist-funnel-chart", "Loading…")),
                    _table("hist-funnel-table", conversions.FUNNEL_COLUMNS, style_as_list_view=True),
                ],
                id="hist-funnel-body",
            ),
        ],
        className="panel",
        id="hist-funnel-panel",
    )
