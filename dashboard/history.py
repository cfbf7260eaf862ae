"""The History page: its layout and its callbacks (range and comparison, totals, time series,
breakdowns, click-to-filter drill-down and CSV export). All through the query service, in the
site's zone; the range the totals callback stores (``hist-range``) is read back with
:func:`day_range`, which checks its site against the request's access again."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Sequence
from zoneinfo import ZoneInfo

from dash import Dash, Input, Output, State, ctx, dcc, html, no_update
from dash.development.base_component import Component

from dashboard import figures, messages, tables
from dashboard.access import SiteChoice, current, problem_for_viewer
from dashboard.callbacks import Callbacks
from dashboard.components import alert, card, filter_bar, graph, loading, table
from dashboard.definitions import goal_spec
from dashboard.figures import METRIC_LABELS
from dashboard.ranges import PRESET_LABELS, DayRange, RangeError, resolve, today_in
from footfall.goals import GoalSpec
from footfall.vocabulary import API_DIMENSIONS, FILTER_DIMENSIONS, GOAL_BREAKDOWN_METRICS, GOAL_FILTER_DIMENSIONS
from query.params import MAX_LIMIT, Filter
from query.runtime import get_conversions, get_service

log = logging.getLogger(__name__)
callbacks = Callbacks()
METRICS = list(METRIC_LABELS)
CSV_MAX_ROWS = 20 * MAX_LIMIT


# -- layout -------------------------------------------------------------------------------


def page(extra: Sequence[Component] = ()) -> html.Div:
    """The history page; ``extra`` sections go under the breakdown (the conversion panels of
    :mod:`dashboard.conversion_panels`, whose callbacks read this page's range)."""
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
            loading(html.Div([_metric_card(m) for m in METRIC_LABELS], className="cards five", id="hist-cards")),
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
                    loading(graph("hist-series", "Loading…")),
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
                    loading(
                        table(
                            "hist-table",
                            tables.breakdown_columns("pages"),
                            page_size=15,
                            style_as_list_view=True,
                            sort_action="native",
                            cell_selectable=True,
                        )
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
    return card(METRIC_LABELS[metric], f"hist-value-{metric}", f"hist-change-{metric}")


# -- callbacks ----------------------------------------------------------------------------


def _site(site_id: object) -> SiteChoice | None:
    return current().site(site_id)


def day_range(store: dict | None) -> tuple[SiteChoice, DayRange, bool] | None:
    """The site, days and comparison of ``hist-range``, or None (unset, or a site this
    request may not read)."""
    if not store:
        return None
    site = _site(store.get("site"))
    if site is None:
        return None
    rng = DayRange(dt.date.fromisoformat(store["first"]), dt.date.fromisoformat(store["last"]))
    return site, rng, bool(store.get("compare"))


def _goal(site: SiteChoice, dimension: str, store: dict | None) -> GoalSpec | None:
    """The goal of ``hist-goal-filter`` when table ``dimension`` can be filtered by it: looked
    up among the site's own goals (the id comes from the browser), None otherwise."""
    if not store or dimension not in GOAL_FILTER_DIMENSIONS:
        return None
    return goal_spec(site.site_id, store.get("goal_id"))


def _filter(store: dict | None) -> Filter | None:
    if not store or store.get("dimension") not in FILTER_DIMENSIONS:
        return None
    return Filter(API_DIMENSIONS[store["dimension"]], str(store["value"]))


def cards(aggregate: dict, compare: bool) -> list[object]:
    """Card values and change lines, in the order of ``METRICS`` (pure)."""
    values, changes = [], []
    for metric in METRICS:
        entry = aggregate["results"][metric]
        values.append(figures.fmt_metric(metric, entry["value"]))
        if compare:
            before = figures.fmt_metric(metric, entry.get("previous"))
            if entry.get("change") is None:
                changes.append(f"previous period: {before}")
            else:
                text, tone = figures.fmt_change(entry["change"], metric)
                changes.append(html.Span([html.Span(text, className=f"change {tone}"), f" vs {before}"]))
        else:
            changes.append("")
    return values + changes


@callbacks.callback(
    Output("hist-dates", "start_date"),
    Output("hist-dates", "end_date"),
    Output("hist-dates", "disabled"),
    Input("hist-preset", "value"),
    Input("site", "value"),
    State("hist-dates", "start_date"),
    State("hist-dates", "end_date"),
)
def show_preset(preset: str, site_id: str | None, start: str | None, end: str | None) -> tuple:
    """A preset writes its days into the picker (read-only); Custom unlocks it."""
    site = _site(site_id)
    if site is None:
        return no_update, no_update, True
    if preset == "custom":
        today = today_in(ZoneInfo(site.tz), get_service().now())
        return start or today.isoformat(), end or today.isoformat(), False
    rng = resolve(preset, None, None, today_in(ZoneInfo(site.tz), get_service().now()))
    return rng.first.isoformat(), rng.last.isoformat(), True


@callbacks.callback(
    Output("hist-range", "data"),
    Output("hist-range-label", "children"),
    *[Output(f"hist-value-{m}", "children") for m in METRICS],
    *[Output(f"hist-change-{m}", "children") for m in METRICS],
    Output("hist-error", "children"),
    Output("hist-error", "hidden"),
    Input("site", "value"),
    Input("hist-preset", "value"),
    Input("hist-dates", "start_date"),
    Input("hist-dates", "end_date"),
    Input("hist-compare", "value"),
    State("hist-range", "data"),
)
def totals(
    site_id: str | None, preset: str, start: str | None, end: str | None, compare: list | None, shown: dict | None
) -> tuple:
    blank = (no_update,) * (2 + 2 * len(METRICS))
    site = _site(site_id)
    if site is None:
        return (*blank, "Choose a site you have access to.", False)
    tz = ZoneInfo(site.tz)
    service = get_service()
    try:
        rng = resolve(preset, start, end, today_in(tz, service.now()))
    except RangeError as exc:
        return (*blank, str(exc), False)
    on = bool(compare)
    try:
        aggregate = service.aggregate(site.info, rng.query_range(tz), on)
    except Exception as exc:
        log.exception("history totals of %s failed", site.site_id)
        return (*blank, problem_for_viewer(exc), False)
    label = f"{rng.label()} · {tz.key}"
    if on:
        prev = rng.previous()
        label += f" · compared with {prev.label()}"
    store = {"site": site.site_id, "first": rng.first.isoformat(), "last": rng.last.isoformat(), "compare": on,
             "notes": aggregate["sources"]["notes"]}  # fmt: skip
    # The picker echoing a preset's days must not reload the chart and table (nor reset a click on them).
    same = shown is not None and {**shown, "notes": None} == {**store, "notes": None}
    return (no_update if same else store, label, *cards(aggregate, on), "", True)


def imported_note(days: list[str], imports: list[str]) -> str:
    """What the history view says of days answered from imported history."""
    span = days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"
    return (
        f"imported history (another product's figures, marked in the chart): {len(days)} day(s), {span}, "
        f"import {', '.join(imports)}; no hours, engaged time or funnels there"
    )


@callbacks.callback(
    Output("hist-series", "figure"),
    Output("hist-notes", "children"),
    Input("hist-range", "data"),
    Input("hist-metric", "value"),
    Input("hist-filter", "data"),
)
def series(store: dict | None, metric: str, filter_store: dict | None) -> tuple:
    resolved = day_range(store)
    if resolved is None or metric not in METRICS:
        return no_update, no_update
    site, rng, compare = resolved
    tz = ZoneInfo(site.tz)
    service = get_service()
    flt = _filter(filter_store)
    try:
        body = service.timeseries(site.info, metric, rng.interval, rng.query_range(tz), flt)
        previous = None
        if compare:
            prev = rng.previous()
            previous = service.timeseries(site.info, metric, rng.interval, prev.query_range(tz), flt)["points"]
    except Exception as exc:
        log.exception("history series of %s failed", site.site_id)
        return figures.empty_figure(problem_for_viewer(exc)), no_update
    now = service.now()
    points = [p for p in body["points"] if dt.datetime.fromisoformat(p["t"]) <= now]  # no future buckets
    fig = figures.metric_series(points, metric, tz, rng.interval, previous)
    notes = list(dict.fromkeys([*store.get("notes", []), *body["sources"]["notes"]]))
    imported = body["sources"].get("imported") or {}
    if imported.get("days"):
        days = imported["days"]
        notes.insert(0, imported_note(days, imported.get("imports", [])))
    watermark = body["sources"].get("watermark")
    notes.append(f"settled by the nightly rollup up to {watermark}" if watermark else "no day rolled up yet")
    if flt is not None:
        notes.insert(0, "the cards above count the whole site; the chart is filtered")
    return fig, [html.Li(n) for n in notes]


@callbacks.callback(
    Output("hist-table", "data"),
    Output("hist-table", "columns"),
    Output("hist-table", "active_cell"),
    Output("hist-table", "selected_cells"),
    Output("hist-table", "page_current"),
    Output("hist-table-note", "children"),
    Output("hist-table-note", "hidden"),
    Output("hist-table-caption", "children"),
    Input("hist-range", "data"),
    Input("hist-dim", "value"),
    Input("hist-filter", "data"),
    Input("hist-goal-filter", "data"),
)
def breakdown(store: dict | None, dimension: str, filter_store: dict | None, goal_store: dict | None) -> tuple:
    resolved = day_range(store)
    if resolved is None or dimension not in API_DIMENSIONS:
        return (no_update,) * 8
    site, rng, _ = resolved
    plan = tables.plan_breakdown(dimension, filter_store)
    try:
        goal = _goal(site, dimension, goal_store)
        if goal is not None:
            return _goal_table(site, rng, dimension, goal)
        body = get_service().breakdown(
            site.info, plan.store_dimension, rng.query_range(ZoneInfo(site.tz)), tables.TABLE_LIMIT, 1,
            tables.breakdown_metrics(dimension, plan.store_dimension), ref=plan.ref, path=plan.path,
        )  # fmt: skip
    except Exception as exc:
        log.exception("breakdown %s of %s failed", dimension, site.site_id)
        return (
            [],
            no_update,
            None,
            [],
            0,
            problem_for_viewer(exc),
            False,
            "",
        )
    rows = tables.value_rows(body["results"])
    note = plan.note or ""
    if figures.has_other(body["results"]):
        note = (note + " " if note else "") + messages.OTHER_VALUES_NOTE
    if goal_store:
        note = (note + " " if note else "") + messages.GOAL_FILTER_ELSEWHERE
    if not rows:
        note = (note + " " if note else "") + messages.NO_HISTORY
    shown = len(rows)
    caption = f"{shown} of {body['total']} values" + (" (the CSV has them all)" if body["total"] > shown else "")
    if dimension in FILTER_DIMENSIONS:
        caption += " · click a row to filter by it"
    elif dimension == "events":
        caption += " · click an event to see its properties"
    return rows, tables.breakdown_columns(dimension, plan.store_dimension), None, [], 0, note, not note, caption


@callbacks.callback(
    Output("hist-goal-filter", "data"),
    Input("hist-goals", "active_cell"),
    Input("hist-goal-clear", "n_clicks"),
    State("hist-range", "data"),
    prevent_initial_call=True,
)
def goal_filter(cell: dict | None, _clear: int | None, store: dict | None) -> dict | None:
    """A goal clicked in the Goals panel filters the breakdown by it; a new range (which
    drops the click) or "Show all visitors" ends that."""
    resolved = day_range(store)
    if ctx.triggered_id == "hist-goal-clear" or not cell or resolved is None:
        return None
    spec = goal_spec(resolved[0].site_id, cell.get("row_id"))
    return {"goal_id": spec.goal_id, "name": spec.name or f"goal {spec.goal_id}"} if spec else None


@callbacks.callback(
    Output("hist-goal-bar", "hidden"),
    Output("hist-goal-label", "children"),
    Input("hist-goal-filter", "data"),
)
def goal_bar(goal: dict | None) -> tuple:
    if not goal:
        return True, ""
    return False, messages.GOAL_FILTER.format(name=goal["name"])


@callbacks.callback(
    Output("hist-filter", "data"),
    Output("hist-dim", "value"),
    Input("hist-table", "active_cell"),
    Input("hist-filter-clear", "n_clicks"),
    State("hist-dim", "value"),
    prevent_initial_call=True,
)
def drill(cell: dict | None, _clear: int | None, dimension: str) -> tuple:
    if ctx.triggered_id == "hist-filter-clear":
        return None, no_update
    if not cell:
        return no_update, no_update
    flt, tab = tables.drill(dimension, cell.get("row_id"))  # rows carry their value as id
    if flt is None:
        return no_update, no_update
    return flt, tab


@callbacks.callback(
    Output("hist-filter-bar", "hidden"),
    Output("hist-filter-label", "children"),
    Input("hist-filter", "data"),
)
def show_filter(flt: dict | None) -> tuple:
    if not flt:
        return True, ""
    return False, f"Filtered: {tables.filter_label(flt)}"


@callbacks.callback(
    Output("hist-csv", "data"),
    Input("hist-csv-button", "n_clicks"),
    State("hist-range", "data"),
    State("hist-dim", "value"),
    State("hist-filter", "data"),
    State("hist-goal-filter", "data"),
    prevent_initial_call=True,
)
def export(
    _clicks: int, store: dict | None, dimension: str, filter_store: dict | None, goal_store: dict | None
) -> object:
    """The table's rows, all of them (up to CSV_MAX_ROWS), as the table is filtered."""
    resolved = day_range(store)
    if resolved is None or dimension not in API_DIMENSIONS:
        return no_update
    site, rng, _ = resolved
    plan = tables.plan_breakdown(dimension, filter_store)
    goal = _goal(site, dimension, goal_store)
    metrics = GOAL_BREAKDOWN_METRICS if goal else tables.breakdown_metrics(dimension, plan.store_dimension)
    query_range = rng.query_range(ZoneInfo(site.tz))
    rows: list[dict] = []
    page_number = 1
    while len(rows) < CSV_MAX_ROWS:
        if goal is not None:
            body = get_conversions().goal_breakdown(
                site.info, API_DIMENSIONS[dimension], goal, query_range, MAX_LIMIT, page_number
            )
        else:
            body = get_service().breakdown(
                site.info, plan.store_dimension, query_range, MAX_LIMIT, page_number, metrics, ref=plan.ref,
                path=plan.path,
            )  # fmt: skip
        rows.extend(body["results"])
        if page_number * MAX_LIMIT >= body["total"]:
            break
        page_number += 1
    text = tables.csv_text(rows, metrics)
    return dcc.send_string(text, figures.csv_name(site.site_id, dimension, rng.first, rng.last), type="text/csv")


def _goal_table(site: SiteChoice, rng: DayRange, dimension: str, goal: GoalSpec) -> tuple:
    """The breakdown callback's outputs for table ``dimension`` filtered by ``goal``."""
    body = get_conversions().goal_breakdown(
        site.info, API_DIMENSIONS[dimension], goal, rng.query_range(ZoneInfo(site.tz)), tables.TABLE_LIMIT, 1
    )
    rows = tables.value_rows(body["results"])
    # Only what the reader must know: days the rollup has not attributed yet.
    notes = [n for n in body["sources"]["notes"] if not n.startswith("visitors:")]
    if not rows:
        notes.append(messages.NO_GOAL_SOURCES)
    note = " ".join(notes)
    caption = f"{len(rows)} of {body['total']} values" + (
        " (the CSV has them all)" if body["total"] > len(rows) else ""
    )
    return rows, tables.goal_breakdown_columns(dimension), None, [], 0, note, not note, caption


def register(app: Dash) -> None:
    """Register the page's callbacks on ``app``."""
    callbacks.register(app)
