"""The pieces every page of the dashboard is built from: tables, cards, graphs, alerts, filter bars.

Pure component trees (no queries); the pages' callbacks fill them. Everything from traffic is
placed as a component's text or a DataTable cell, both rendered as text by React.
"""

from __future__ import annotations

import warnings

from dash import dash_table, dcc, html
from dash.development.base_component import Component

from dashboard.figures import empty_figure

# DataTable renders every cell as plain text, which is what attacker-controlled values need;
# Dash 4 suggests dash-ag-grid instead, an extra dependency this dashboard does not need yet.
warnings.filterwarnings("ignore", message=r"\s*The dash_table.DataTable will be removed", category=DeprecationWarning)

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


def table(table_id: str, columns: list[dict[str, object]], **extra: object) -> dash_table.DataTable:
    options = {"cell_selectable": False, **TABLE_STYLE, **extra}
    return dash_table.DataTable(id=table_id, columns=columns, data=[], **options)


def graph(graph_id: str, message: str) -> dcc.Graph:
    """A graph showing ``message`` until its callback draws it."""
    return dcc.Graph(id=graph_id, figure=empty_figure(message), config=GRAPH_CONFIG)


def loading(component: Component) -> dcc.Loading:
    """A dot while the component waits for a slow query (shown only after 300 ms)."""
    return dcc.Loading(component, type="dot", delay_show=300)


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
