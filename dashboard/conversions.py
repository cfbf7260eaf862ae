"""Pure helpers of the history view's goals, funnel and custom-event panels: query results
to table rows and Plotly figures. No I/O, no Dash callbacks.

Goal and funnel names are typed by staff, event names and property values come from
traffic (anyone can send ``footfall("<img src=x onerror=…>")``): rows are DataTable cells
(rendered as text), and every string placed in a figure goes through
:func:`dashboard.figures.plot_text`, as in :mod:`dashboard.figures`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import plotly.graph_objects as go

from dashboard.figures import ACCENT, BASE_LAYOUT, LABEL_MAX, MUTED, empty_figure, fmt_duration, plot_text
from dashboard.tables import INT, RATE
from footfall.revenue import money_text

GOAL_COLUMNS: list[dict[str, object]] = [
    {"name": "Goal", "id": "name"},
    {"name": "Reached by", "id": "definition"},
    {"name": "Conversions", "id": "events", "type": "numeric", "format": INT},
    {"name": "Unique conversions", "id": "visitors", "type": "numeric", "format": INT},
    {"name": "Conversion rate", "id": "conversion_rate", "type": "numeric", "format": RATE},
    {"name": "Revenue", "id": "revenue"},
    {"name": "Average per conversion", "id": "revenue_average"},
    {"name": "Revenue per visitor", "id": "revenue_per_visitor"},
]
FUNNEL_COLUMNS: list[dict[str, object]] = [
    {"name": "Step", "id": "step"},
    {"name": "Visitors", "id": "visitors", "type": "numeric", "format": INT},
    {"name": "From previous step", "id": "conversion_from_previous", "type": "numeric", "format": RATE},
    {"name": "From first step", "id": "conversion_from_first", "type": "numeric", "format": RATE},
    {"name": "Median time from previous", "id": "median_from_previous"},
]
PROPERTY_COLUMNS: list[dict[str, object]] = [
    {"name": "Value", "id": "value"},
    {"name": "Events", "id": "events", "type": "numeric", "format": INT},
    {"name": "Visitors", "id": "visitors", "type": "numeric", "format": INT},
]
FUNNEL_COLOR = "#0f766e"


def goal_definition(goal: Mapping[str, object]) -> str:
    """What reaches a goal, in words: ``page /pricing*`` or ``event signup where plan = pro``."""
    if goal.get("kind") == "page":
        return f"page {goal.get('path', '')}"
    text = f"event {goal.get('event', '')}"
    if goal.get("prop"):
        text += f" where {goal['prop']} = {goal.get('value', '')}"
    if goal.get("revenue_prop"):
        text += f", revenue {goal['revenue_prop']} in {goal.get('currency') or goal.get('currency_prop', '')}"
    return text


def goal_rows(body: Mapping[str, object]) -> list[dict[str, object]]:
    """The rows of the goals table from the service's ``goals`` answer; each row's ``id`` is
    its goal id, which a click hands back (``active_cell["row_id"]``). Revenue goals show their
    figures per currency, and how many conversions had no valid revenue."""
    rows = []
    for g in body.get("results", []):  # type: ignore[union-attr]
        revenue = g.get("revenue") or {}
        currencies = revenue.get("currencies")
        total = money_text(currencies)
        if revenue and revenue.get("without_revenue"):
            total = f"{total or 'none'} ({revenue['without_revenue']:,} without revenue)"
        rows.append({
            "id": str(g["goal_id"]),
            "name": g.get("name") or f"goal {g['goal_id']}",
            "definition": goal_definition(g),
            "events": g.get("events"),
            "visitors": g.get("visitors"),
            "conversion_rate": g.get("conversion_rate"),
            "revenue": total,
            "revenue_average": money_text(currencies, "average"),
            "revenue_per_visitor": money_text(currencies, "per_visitor"),
        })  # fmt: skip
    return rows


def goal_series_figure(days: Sequence[Mapping[str, object]], name: str) -> go.Figure:
    """A goal's conversions (bars) and unique conversions (line) per day; days no layer
    counted (``source`` missing) are gaps, not zeros."""
    if not days or all(d.get("events") is None for d in days):
        return empty_figure(f"No conversions of {name} counted in this range")
    x = [str(d["day"]) for d in days]
    fig = go.Figure()
    fig.add_trace(
        go.Bar(
            x=x,
            y=[d.get("events") for d in days],
            name="conversions",
            marker_color="rgba(37, 99, 235, 0.35)",
            hovertemplate="%{x}: %{y:,} conversions<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=[d.get("visitors") for d in days],
            name="unique conversions",
            mode="lines+markers",
            line={"color": ACCENT, "width": 2},
            hovertemplate="%{x}: %{y:,} unique conversions<extra></extra>",
        )
    )
    layout = {**BASE_LAYOUT, "showlegend": True, "hovermode": "x unified"}
    fig.update_layout(**layout, height=240, legend={"orientation": "h", "y": 1.12}, uirevision="goal")
    # Category axis: a day is a label, and a range of one or two days must not become hours.
    fig.update_xaxes(type="category")
    fig.update_yaxes(rangemode="tozero")
    return fig


def fmt_ms(value: object) -> str:
    """A duration in milliseconds as the cards show durations ("—" when unknown)."""
    if value is None:
        return "—"
    seconds = float(value) / 1000  # type: ignore[arg-type]
    return f"{seconds:.1f}s" if seconds < 10 else fmt_duration(seconds)


def funnel_rows(result: Mapping[str, object]) -> list[dict[str, object]]:
    """The funnel table: one row per step, in order, from the service's ``funnel`` answer."""
    return [
        {
            "id": str(s.get("goal_id")),
            "step": f"{i}. {s.get('name') or s.get('goal_id')}",
            "visitors": s.get("visitors"),
            "conversion_from_previous": s.get("conversion_from_previous"),
            "conversion_from_first": s.get("conversion_from_first"),
            "median_from_previous": "" if i == 1 else fmt_ms(s.get("median_ms_from_previous")),
        }
        for i, s in enumerate(result.get("steps", []), start=1)  # type: ignore[arg-type]
    ]


def _pct(value: object) -> str:
    return "—" if value is None else f"{float(value) * 100:.1f} %"  # type: ignore[arg-type]


def funnel_figure(result: Mapping[str, object]) -> go.Figure:
    """A funnel chart of the service's ``funnel`` answer: visitors per step, each bar saying
    its conversion from the previous and the first step and the median time it took."""
    steps: list[Mapping[str, object]] = list(result.get("steps", []))  # type: ignore[call-overload]
    if not steps or not any(s.get("visitors") for s in steps):
        return empty_figure("No visitor reached the first step of this funnel in this range")
    # Plotly draws a category once: two steps of one name (a goal used twice) need distinct labels.
    labels = [f"{i}. {plot_text(s.get('name') or s.get('goal_id'), LABEL_MAX)}" for i, s in enumerate(steps, 1)]
    texts, hovers = [], []
    for i, s in enumerate(steps):
        visitors = int(s.get("visitors") or 0)  # type: ignore[call-overload]
        if i == 0:
            texts.append(f"{visitors:,}")
            hovers.append(f"{visitors:,} visitors")
            continue
        prev, first = _pct(s.get("conversion_from_previous")), _pct(s.get("conversion_from_first"))
        median = fmt_ms(s.get("median_ms_from_previous"))
        texts.append(f"{visitors:,} · {prev} of previous · {first} of first")
        hovers.append(f"{visitors:,} visitors<br>{prev} of the previous step, {first} of the first"
                      f"<br>median time from the previous step: {median}")  # fmt: skip
    fig = go.Figure(
        go.Funnel(
            y=labels,
            x=[int(s.get("visitors") or 0) for s in steps],  # type: ignore[call-overload]
            text=texts,
            textinfo="text",
            textposition="inside",
            customdata=hovers,
            hovertemplate="%{y}<br>%{customdata}<extra></extra>",
            marker={"color": [FUNNEL_COLOR if i == 0 else ACCENT for i in range(len(steps))]},
            connector={"fillcolor": "#e2e8f0", "line": {"color": MUTED, "width": 0}},
        )
    )
    layout = {**BASE_LAYOUT, "hovermode": "closest", "margin": {"l": 10, "r": 10, "t": 10, "b": 10}}
    fig.update_layout(**layout, height=max(220, 70 * len(steps) + 40), uirevision="funnel")
    fig.update_yaxes(automargin=True)
    return fig


def funnel_caption(result: Mapping[str, object]) -> str:
    """How the funnel counts, in one line: its window and whether it is strict."""
    minutes = int(result.get("window_minutes") or 0)  # type: ignore[call-overload]
    window = "within one session" if minutes == 0 else f"within {minutes} min of the first step"
    strict = "; nothing else in between" if result.get("strict") else "; other pages and events allowed in between"
    return f"Steps in order, {window}{strict}."


def property_rows(body: Mapping[str, object]) -> list[dict[str, object]]:
    """The values table of one event property from the service's ``event_properties``."""
    return [
        {"id": str(r["value"]), "value": r["value"], "events": r.get("events"), "visitors": r.get("visitors")}
        for r in body.get("results", [])  # type: ignore[union-attr]
    ]


def property_options(body: Mapping[str, object]) -> list[dict[str, str]]:
    """Dropdown options of an event's property names (labels are rendered as text)."""
    return [{"label": str(r["prop"]), "value": str(r["prop"])} for r in body.get("results", [])]  # type: ignore[union-attr]
