"""The Journeys page (``/dashboard/journeys``): from a start page or custom event, the steps taken next
(or before it), one column per step; clicking an option of a column selects it and shows the step
after. Its layout and callbacks; the figures come from :mod:`query.journeys` (docs/reports.md,
"Journeys"), the same answer as ``GET /api/v1/sites/<site>/journeys``.

The site is checked against the request's :class:`~dashboard.access.Access` on every callback; the
browser sends back only the column and row of a click, looked up in the labels the server sent.
Labels from traffic are only ever a component's text.
"""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

from dash import ALL, Dash, Input, Output, State, ctx, dcc, html, no_update
from dash.development.base_component import Component

from dashboard.access import current
from dashboard.callbacks import Callbacks
from dashboard.components import loading
from dashboard.ranges import DayRange, RangeError, resolve, today_in
from footfall.journeys import ENDS
from footfall.vocabulary import QueryError
from query.journeys import parse
from query.runtime import get_journeys

callbacks = Callbacks()
OPTIONS = 10  # options shown per step
DEFAULT_DAYS = 7  # ending yesterday: today is never settled


DIRECTIONS = [{"label": "Steps after", "value": "next"}, {"label": "Steps before", "value": "previous"}]


def _text(component_id: str, value: str, placeholder: str) -> dcc.Input:
    """A text field read when it loses focus or Enter is pressed."""
    return dcc.Input(id=component_id, type="text", value=value, debounce=True, placeholder=placeholder)


def page() -> html.Div:
    yesterday = dt.datetime.now(dt.UTC).date() - dt.timedelta(days=1)
    first = yesterday - dt.timedelta(days=DEFAULT_DAYS - 1)
    return html.Div(
        [
            dcc.Store(id="jr-query"),
            dcc.Store(id="jr-labels"),
            html.Div(
                [
                    html.H2("Journeys"),
                    html.Span("Click a step to see where its visitors went next.", className="hint"),
                ],
                className="panel-head",
            ),
            html.Div(
                [
                    _text("jr-start", "/", "/pricing or signup"),
                    dcc.RadioItems(
                        id="jr-direction", options=DIRECTIONS, value="next", inline=True, className="segmented"
                    ),
                    _text("jr-first", first.isoformat(), "first day"),
                    _text("jr-last", yesterday.isoformat(), "last day"),
                ],
                className="controls",
            ),
            html.Div("", id="jr-caption", className="status"),
            loading(html.Div([], id="jr-columns", className="journey-columns")),
            html.Ul([], id="jr-notes", className="notes"),
        ],
        className="panel",
        id="journeys-panel",
    )


@callbacks.callback(
    Output("jr-query", "data"),
    Input("site", "value"),
    Input("jr-start", "value"),
    Input("jr-direction", "value"),
    Input("jr-first", "value"),
    Input("jr-last", "value"),
    Input({"type": "jr-option", "step": ALL, "row": ALL}, "n_clicks"),
    State("jr-labels", "data"),
    State("jr-query", "data"),
)
def choose(
    site_id: str | None, start: str | None, direction: str | None, first: str | None, last: str | None,
    _clicks: list, labels: list[list[str]] | None, query: dict | None,
) -> dict | object:  # fmt: skip
    """The question asked: a click on a step's option selects it (the path up to that step, then
    it); anything else asks anew from the start, with no step selected."""
    path: list[str] = []
    clicked = ctx.triggered_id
    if isinstance(clicked, dict) and clicked.get("type") == "jr-option":
        if not ctx.triggered or not ctx.triggered[0].get("value") or not query or not labels:
            return no_update  # an option appearing is no click
        step, row = int(clicked["step"]), int(clicked["row"])
        try:
            label = labels[step - 1][row]
        except (IndexError, TypeError):
            return no_update
        if label in ENDS:
            return no_update  # nothing follows an end
        return {**query, "path": [*query.get("path", [])[: step - 1], label]}
    return {"site": site_id, "start": start or "", "direction": direction or "next", "first": first or "",
            "last": last or "", "path": path}  # fmt: skip


def _option(step: int, row: int, option: dict, selected: bool) -> html.Button:
    share = option["share"]
    return html.Button(
        [
            html.Span(str(option["label"]), className="journey-label"),
            html.Span(f"{option['visitors']:,}", className="journey-visitors"),
            html.Span(f"{share * 100:.1f}%" if share is not None else "", className="journey-share"),
        ],
        id={"type": "jr-option", "step": step, "row": row},
        className="journey-option selected" if selected else "journey-option",
        disabled=option["label"] in ENDS,
        n_clicks=0,
    )


def columns(body: dict) -> tuple[list[Component], list[list[str]]]:
    """The answer's steps as columns of buttons, and each column's labels (pure)."""
    out, labels = [], []
    for step in body["steps"]:
        n = int(step["step"])
        rows = [_option(n, row, o, o["label"] == step["selected"]) for row, o in enumerate(step["options"])]
        head = f"Step {n}" if body["direction"] == "next" else f"Step -{n}"
        out.append(html.Div([html.H3(head), *rows], className="journey-column", id=f"jr-step-{n}"))
        labels.append([str(o["label"]) for o in step["options"]])
    return out, labels


@callbacks.callback(
    Output("jr-columns", "children"),
    Output("jr-labels", "data"),
    Output("jr-caption", "children"),
    Output("jr-notes", "children"),
    Input("jr-query", "data"),
)
def show(query: dict | None) -> tuple:
    """The columns of the question in ``jr-query`` (nothing for a site this request may not read)."""
    site = current().site((query or {}).get("site"))
    if not query or site is None:
        return [], [], "", []
    tz = ZoneInfo(site.tz)
    try:
        days: DayRange = resolve("custom", query["first"], query["last"], today_in(tz, dt.datetime.now(dt.UTC)))
        question = parse(query["start"], ",".join(query["path"]), query["direction"])
    except RangeError as exc:
        return [], [], str(exc), []
    except QueryError as exc:
        return [], [], str(exc), []
    body = get_journeys().journeys(site.info, days.query_range(tz), question, OPTIONS)
    shown, labels = columns(body)
    where = "reached" if question.direction == "next" else "ended at"
    caption = f"{body['visitors']:,} visitors {where} {question.start} ({days.label()})"
    notes = [html.Li(note) for note in body["sources"]["notes"]]  # type: ignore[index]
    return shown, labels, caption, notes


def register(app: Dash) -> None:
    """Register the page's callbacks on ``app``."""
    callbacks.register(app)
