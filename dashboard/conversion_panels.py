"""The History page's conversion panels: goals (and one goal per day), funnels, and the
properties of a clicked custom event; their layout and their callbacks.

:func:`panels` are placed under the history page's breakdown (:func:`dashboard.history.page`'s
``extra``). Each callback reads the range the history page stored (``hist-range``, through
:func:`dashboard.history.day_range`, which checks its site against the request's
:class:`~dashboard.access.Access`); goal and funnel ids sent back by the browser are only looked
up among that site's own definitions. Names and values from traffic only ever become a
component's text or a DataTable cell.
"""

from __future__ import annotations

import logging
from zoneinfo import ZoneInfo

from dash import Dash, Input, Output, State, ctx, dcc, html, no_update
from django.urls import reverse

from dashboard import conversions, messages
from dashboard.access import current, problem_for_viewer
from dashboard.callbacks import Callbacks
from dashboard.components import graph, loading, table
from dashboard.definitions import funnel_specs, goal_spec, goal_specs
from dashboard.figures import empty_figure
from dashboard.history import day_range
from footfall.goals import EVENT_NAME
from query.runtime import get_conversions

log = logging.getLogger(__name__)
callbacks = Callbacks()
PROPERTY_LIMIT = 100  # values per property table (the API pages through them all)


# -- layout -------------------------------------------------------------------------------

LIST: dict[str, object] = {"style_as_list_view": True, "sort_action": "native"}


def panels() -> list[html.Section]:
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
            loading(table("hist-prop-table", conversions.PROPERTY_COLUMNS, page_size=10, **LIST)),
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
            loading(table("hist-goals", conversions.GOAL_COLUMNS, page_size=10, cell_selectable=True, **LIST)),
            html.Div("", id="hist-goals-caption", className="status"),
            html.Div(
                [html.H3("", id="hist-goal-title"), graph("hist-goal-series", "")],
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
                    loading(graph("hist-funnel-chart", "Loading…")),
                    table("hist-funnel-table", conversions.FUNNEL_COLUMNS, style_as_list_view=True),
                ],
                id="hist-funnel-body",
            ),
        ],
        className="panel",
        id="hist-funnel-panel",
    )


# -- callbacks ----------------------------------------------------------------------------


def admin_links(kind: str, site_id: str) -> list[html.A]:
    """Links to the admin pages of ``kind`` (``goal`` or ``funnel``) of one site, for staff
    who may view them (:attr:`Access.definitions_admin`): the site's list, and the form that
    adds one (the admin itself checks the permission to add)."""
    changelist = reverse(f"admin:footfall_core_{kind}_changelist")
    return [
        html.A(f"{kind.capitalize()}s in the admin", href=f"{changelist}?site__site_id__exact={site_id}",
               className="link-button"),
        html.A(f"Add a {kind}", href=reverse(f"admin:footfall_core_{kind}_add"), className="link-button"),
    ]  # fmt: skip


def how_to_define(site_id: str) -> str:
    """The empty state's second sentence, for whoever reads it: staff who may open the admin
    pages get them and the command, other signed-in users the API, share-link visitors
    nothing they could not act on."""
    access = current()
    if access.definitions_admin:
        return messages.HOW_TO_DEFINE_STAFF.format(site=site_id)
    return messages.HOW_TO_DEFINE.format(site=site_id) if access.signed_in else ""


@callbacks.callback(
    Output("hist-goals", "data"),
    Output("hist-goals", "active_cell"),
    Output("hist-goals", "selected_cells"),
    Output("hist-goals-empty", "children"),
    Output("hist-goals-empty", "hidden"),
    Output("hist-goals-caption", "children"),
    Output("hist-goals-admin", "children"),
    Input("hist-range", "data"),
)
def goals_table(store: dict | None) -> tuple:
    """The site's goals with their conversions over the range; a new range drops the click."""
    resolved = day_range(store)
    if resolved is None:
        return (no_update,) * 7
    site, rng, _ = resolved
    links = admin_links("goal", site.site_id) if current().definitions_admin else []
    try:
        specs = goal_specs(site.site_id)
        if not specs:
            empty = f"{messages.NO_GOALS} {how_to_define(site.site_id)}".strip()
            return [], None, [], empty, False, "", links
        body = get_conversions().goals(site.info, rng.query_range(ZoneInfo(site.tz)), specs)
    except Exception as exc:
        log.exception("goals of %s failed", site.site_id)
        return [], None, [], problem_for_viewer(exc), False, "", links
    total = body.get("visitors")
    caption = "conversion rate: unique conversions / visitors of the range"
    if isinstance(total, int):
        caption += f" ({total:,} visitors)"
    notes = [n for n in body["sources"]["notes"] if n.startswith("goal ")]  # days rolled up before a goal existed
    return conversions.goal_rows(body), None, [], " ".join(notes), not notes, caption, links


@callbacks.callback(
    Output("hist-goal-detail", "hidden"),
    Output("hist-goal-title", "children"),
    Output("hist-goal-series", "figure"),
    Input("hist-goals", "active_cell"),
    State("hist-range", "data"),
    prevent_initial_call=True,
)
def goal_detail(cell: dict | None, store: dict | None) -> tuple:
    """Clicking a goal shows its conversions and unique conversions per day of the range."""
    resolved = day_range(store)
    if resolved is None or not cell:
        return True, "", no_update
    site, rng, _ = resolved
    try:
        spec = goal_spec(site.site_id, cell.get("row_id"))
        if spec is None:  # not a goal of this site (or deleted since the table was drawn)
            return True, "", no_update
        days = get_conversions().goal_series(site.info, rng.query_range(ZoneInfo(site.tz)), spec)
    except Exception as exc:
        log.exception("goal %s of %s per day failed", cell.get("row_id"), site.site_id)
        return False, "", empty_figure(problem_for_viewer(exc))
    name = spec.name or spec.goal_id
    return False, f"{name} per day", conversions.goal_series_figure(days, name)


@callbacks.callback(
    Output("hist-funnel", "options"),
    Output("hist-funnel", "value"),
    Output("hist-funnel-empty", "children"),
    Output("hist-funnel-empty", "hidden"),
    Output("hist-funnels-admin", "children"),
    Output("hist-funnel-body", "hidden"),
    Input("hist-range", "data"),
    State("hist-funnel", "value"),
)
def funnel_choices(store: dict | None, chosen: str | None) -> tuple:
    """The site's funnels in the picker; the one chosen stays chosen while it exists.
    Without funnels only the empty state shows (no blank chart under it)."""
    resolved = day_range(store)
    if resolved is None:
        return (no_update,) * 6
    site = resolved[0]
    links = admin_links("funnel", site.site_id) if current().definitions_admin else []
    try:
        specs = funnel_specs(site.site_id)
    except Exception as exc:
        log.exception("funnels of %s failed", site.site_id)
        return [], None, problem_for_viewer(exc), False, links, True
    if not specs:
        empty = f"{messages.NO_FUNNELS} {how_to_define(site.site_id)}".strip()
        return [], None, empty, False, links, True
    options = [{"label": f.name or f"funnel {f.funnel_id}", "value": f.funnel_id} for f in specs]
    value = chosen if any(f.funnel_id == chosen for f in specs) else specs[0].funnel_id
    return options, value, "", True, links, False


@callbacks.callback(
    Output("hist-funnel-chart", "figure"),
    Output("hist-funnel-table", "data"),
    Output("hist-funnel-caption", "children"),
    Input("hist-funnel", "value"),
    Input("hist-range", "data"),
)
def funnel_chart(funnel_id: str | None, store: dict | None) -> tuple:
    resolved = day_range(store)
    if resolved is None:
        return no_update, no_update, no_update
    site, rng, _ = resolved
    try:
        spec = next((f for f in funnel_specs(site.site_id) if f.funnel_id == funnel_id), None)
        if spec is None:
            return empty_figure("Choose a funnel"), [], ""
        result = get_conversions().funnel(site.info, spec, rng.query_range(ZoneInfo(site.tz)))
    except Exception as exc:
        log.exception("funnel %s of %s failed", funnel_id, site.site_id)
        return empty_figure(problem_for_viewer(exc)), [], ""
    return conversions.funnel_figure(result), conversions.funnel_rows(result), conversions.funnel_caption(result)


@callbacks.callback(
    Output("hist-event", "data"),
    Input("hist-table", "active_cell"),
    Input("hist-event-close", "n_clicks"),
    State("hist-dim", "value"),
    prevent_initial_call=True,
)
def choose_event(cell: dict | None, _close: int | None, dimension: str) -> object:
    """Clicking a row of the custom events table picks that event (its row id is its name)."""
    if ctx.triggered_id == "hist-event-close":
        return None
    if dimension != "events" or not cell:
        return no_update
    name = cell.get("row_id")
    # Names the tracker cannot send (and the (other) row) have no properties to show.
    return name if isinstance(name, str) and EVENT_NAME.match(name) else no_update


@callbacks.callback(
    Output("hist-event-panel", "hidden"),
    Output("hist-event-name", "children"),
    Input("hist-event", "data"),
    Input("hist-dim", "value"),
)
def event_panel(event: str | None, dimension: str) -> tuple:
    shown = bool(event) and dimension == "events"
    return not shown, event if shown else ""


@callbacks.callback(
    Output("hist-prop", "options"),
    Output("hist-prop", "value"),
    Output("hist-prop-note", "children"),
    Output("hist-prop-note", "hidden"),
    Input("hist-event", "data"),
    Input("hist-range", "data"),
    State("hist-prop", "value"),
)
def property_names(event: str | None, store: dict | None, chosen: str | None) -> tuple:
    """The event's property names over the range; the one chosen stays while it is listed."""
    resolved = day_range(store)
    if resolved is None or not event:
        return [], None, "", True
    site, rng, _ = resolved
    try:
        body = get_conversions().event_property_names(site.info, event, rng.query_range(ZoneInfo(site.tz)))
    except Exception as exc:
        log.exception("property names of %s of %s failed", event, site.site_id)
        return [], None, problem_for_viewer(exc), False
    options = conversions.property_options(body)
    if not options:
        return [], None, messages.NO_PROPERTIES, False
    value = chosen if any(o["value"] == chosen for o in options) else options[0]["value"]
    notes = " ".join(body["sources"]["notes"])
    return options, value, notes, not notes


@callbacks.callback(
    Output("hist-prop-table", "data"),
    Output("hist-prop-caption", "children"),
    Input("hist-prop", "value"),
    Input("hist-event", "data"),
    Input("hist-range", "data"),
)
def property_values(prop: str | None, event: str | None, store: dict | None) -> tuple:
    resolved = day_range(store)
    if resolved is None or not event or not prop:
        return [], ""
    site, rng, _ = resolved
    try:
        body = get_conversions().event_properties(
            site.info, event, prop, rng.query_range(ZoneInfo(site.tz)), PROPERTY_LIMIT, 1
        )
    except Exception as exc:
        log.exception("property %s of %s of %s failed", prop, event, site.site_id)
        return [], problem_for_viewer(exc)
    rows = conversions.property_rows(body)
    caption = f"{len(rows)} of {body['total']} values"
    return rows, caption


def register(app: Dash) -> None:
    """Register the panels' callbacks on ``app``."""
    callbacks.register(app)
