"""Pure functions from query results to Plotly figures and display strings: no I/O, no Dash.

Every string that came from traffic (paths, referrers, titles) goes through :func:`plot_text`
before it reaches a figure: Plotly renders a subset of HTML in labels and hover text
(``<a href>``, ``<b>``, ``<br>``), so raw values could inject links or mangle the chart.
Escaped, they show as the literal text they are (Plotly decodes the entities for display).
"""

from __future__ import annotations

import datetime as dt
import html
from collections.abc import Iterable, Mapping, Sequence
from zoneinfo import ZoneInfo

import plotly.graph_objects as go

from footfall.vocabulary import VALUE_OTHER

METRIC_LABELS = {
    "pageviews": "Page views",
    "visitors": "Visitors",
    "sessions": "Sessions",
    "bounce_rate": "Bounce rate",
    "visit_duration": "Visit duration",
}
ACCENT = "#2563eb"
MUTED = "#94a3b8"
IMPORTED = "#d97706"  # points of imported history (another product's figures)
LABEL_MAX = 48
BASE_LAYOUT = {
    "template": "plotly_white",
    "margin": {"l": 40, "r": 10, "t": 10, "b": 40},
    "font": {"family": "system-ui, -apple-system, Segoe UI, Roboto, sans-serif", "size": 12},
    "showlegend": False,
    "hovermode": "x unified",
}


OTHER_LABEL = "other values"  # how VALUE_OTHER reads on the dashboard (messages.OTHER_VALUES_NOTE says what it is)


def shown_value(value: object) -> object:
    """A stored value as the dashboard shows it: the speed layer's ``(other)`` (values past its
    caps, see realtime.keys) as "other values", anything else as it is."""
    return OTHER_LABEL if value == VALUE_OTHER else value


def has_other(rows: Iterable[Mapping[str, object]], *keys: str) -> bool:
    """Whether any of ``rows`` holds ``(other)`` under one of ``keys`` (default ``value``)."""
    return any(row.get(key) == VALUE_OTHER for row in rows for key in (keys or ("value",)))


def plot_text(value: object, limit: int | None = None) -> str:
    """``value`` as literal text for a Plotly label: HTML-escaped, optionally shortened."""
    text = "" if value is None else str(value)
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return html.escape(text, quote=False)


def local_time(iso: str, tz: ZoneInfo) -> str:
    """An ISO instant as the site's wall-clock time (Plotly's date axes have no time zones)."""
    return dt.datetime.fromisoformat(iso).astimezone(tz).strftime("%Y-%m-%d %H:%M")


def fmt_number(value: object) -> str:
    if value is None:
        return "—"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.1f}"
    return f"{int(value):,}"


def fmt_duration(seconds: float) -> str:
    whole = round(seconds)
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def fmt_metric(metric: str, value: object) -> str:
    """A metric's value as shown on a card: counts with separators, rates in %, durations."""
    if value is None:
        return "—"
    if metric == "bounce_rate":
        return f"{float(value) * 100:.1f} %"
    if metric == "visit_duration":
        return fmt_duration(float(value))
    return fmt_number(value)


def fmt_change(change: float | None, metric: str = "pageviews") -> tuple[str, str]:
    """The change against the previous period and its tone (``up``/``down``/``flat``/``none``).

    For the bounce rate a rise is bad news, so its tone is inverted."""
    if change is None:
        return "no previous data", "none"
    pct = change * 100
    if abs(pct) < 0.05:
        return "±0.0 %", "flat"
    good = (pct > 0) != (metric == "bounce_rate")
    return f"{'+' if pct > 0 else '-'}{abs(pct):.1f} %", "up" if good else "down"


def empty_figure(message: str) -> go.Figure:
    """A blank chart that says why it is blank."""
    fig = go.Figure()
    fig.update_layout(
        **{**BASE_LAYOUT, "hovermode": False},
        xaxis={"visible": False},
        yaxis={"visible": False},
        annotations=[
            {
                "text": plot_text(message),
                "showarrow": False,
                "xref": "paper",
                "yref": "paper",
                "x": 0.5,
                "y": 0.5,
                "font": {"color": "#475569", "size": 13},
            }
        ],
        height=260,
    )
    return fig


def pageviews_per_minute(points: Sequence[Mapping[str, object]], tz: ZoneInfo) -> go.Figure:
    """Bars of page views per minute (the realtime answer's ``pageviews_per_minute``)."""
    if not any(p["value"] for p in points):
        return empty_figure("No page views in this window yet")
    fig = go.Figure(
        go.Bar(
            x=[local_time(str(p["t"]), tz) for p in points],
            y=[p["value"] for p in points],
            marker_color=ACCENT,
            hovertemplate="%{y:,} page views<extra></extra>",
        )
    )
    fig.update_layout(**BASE_LAYOUT, height=260, uirevision="live", bargap=0.15)
    fig.update_xaxes(tickformat="%H:%M", fixedrange=True)
    fig.update_yaxes(rangemode="tozero", fixedrange=True)
    return fig


def flow_sankey(flows: Iterable[Mapping[str, object]]) -> go.Figure:
    """Referrer → page flows as a Sankey diagram (referrers left, pages right)."""
    flows = [f for f in flows if f["pageviews"]]
    if not flows:
        return empty_figure("No referrer → page flows in this window yet")
    nodes: dict[tuple[str, str], int] = {}
    for f in flows:  # referrers first, so they are laid out on the left
        nodes.setdefault(("ref", str(f["referrer"])), len(nodes))
    for f in flows:
        nodes.setdefault(("page", str(f["page"])), len(nodes))
    labels = [plot_text(shown_value(value), LABEL_MAX) for _, value in nodes]
    full = [plot_text(shown_value(value)) for _, value in nodes]
    fig = go.Figure(
        go.Sankey(
            arrangement="snap",
            node={
                "label": labels,
                "customdata": full,
                "hovertemplate": "%{customdata}: %{value:,} page views<extra></extra>",
                "color": [ACCENT if kind == "ref" else "#0f766e" for kind, _ in nodes],
                "pad": 18,  # room for each label: small nodes next to a big one must not overlap
                "thickness": 14,
            },
            link={
                "source": [nodes[("ref", str(f["referrer"]))] for f in flows],
                "target": [nodes[("page", str(f["page"]))] for f in flows],
                "value": [f["pageviews"] for f in flows],
                "customdata": [
                    f"{plot_text(shown_value(f['referrer']))} → {plot_text(shown_value(f['page']))}" for f in flows
                ],
                "hovertemplate": "%{customdata}: %{value:,} page views<extra></extra>",
                "color": "rgba(37, 99, 235, 0.25)",
            },
        )
    )
    per_side = max(sum(1 for kind, _ in nodes if kind == "ref"), sum(1 for kind, _ in nodes if kind == "page"))
    height = max(300, 40 * per_side + 60)
    fig.update_layout(**{**BASE_LAYOUT, "hovermode": "closest"}, height=height, uirevision="flows")
    return fig


def metric_series(
    points: Sequence[Mapping[str, object]],
    metric: str,
    tz: ZoneInfo,
    interval: str,
    previous: Sequence[Mapping[str, object]] | None = None,
) -> go.Figure:
    """A metric over time; with ``previous``, the previous period's points overlaid on the same x.
    Points from imported history are marked (another colour, "imported" in their hover)."""
    if not points or all(p["value"] is None for p in points):
        return empty_figure(f"No {METRIC_LABELS.get(metric, metric).lower()} for this range")
    fmt = "%Y-%m-%d" if interval == "day" else "%Y-%m-%d %H:%M"
    x, labels, ticks = instant_axis([str(p["t"]) for p in points], tz, interval)
    scale = 100.0 if metric == "bounce_rate" else 1.0
    suffix = " %" if metric == "bounce_rate" else (" s" if metric == "visit_duration" else "")

    def values(series: Sequence[Mapping[str, object]]) -> list[float | None]:
        return [None if p["value"] is None else float(p["value"]) * scale for p in series]

    fig = go.Figure()
    if previous:
        shown = previous[: len(points)]
        fig.add_trace(
            go.Scatter(
                x=x[: len(shown)],
                y=values(shown),
                name="previous period",
                mode="lines",
                line={"color": MUTED, "dash": "dot", "width": 2},
                customdata=[dt.datetime.fromisoformat(str(p["t"])).astimezone(tz).strftime(fmt) for p in shown],
                hovertemplate=f"previous (%{{customdata}}): %{{y:,.1f}}{suffix}<extra></extra>",
            )
        )
    imported = [p.get("source") == "imported" for p in points]
    fig.add_trace(
        go.Scatter(
            x=x,
            y=values(points),
            name=METRIC_LABELS.get(metric, metric),
            mode="lines+markers" if len(points) <= 62 or any(imported) else "lines",
            line={"color": ACCENT, "width": 2},
            marker={"color": [IMPORTED if mark else ACCENT for mark in imported]},
            fill="tozeroy" if metric in {"pageviews", "visitors", "sessions"} else None,
            fillcolor="rgba(37, 99, 235, 0.08)",
            customdata=[f"{label} (imported)" if mark else label for label, mark in zip(labels, imported, strict=True)],
            hovertemplate=f"%{{customdata}}: %{{y:,.1f}}{suffix}<extra></extra>",
        )
    )
    fig.update_layout(**BASE_LAYOUT, height=300, uirevision=metric)
    fig.update_xaxes(type="category" if interval == "day" and len(points) <= 3 else "date")
    if ticks:
        fig.update_xaxes(tickvals=[x[i] for i in ticks], ticktext=[labels[i] for i in ticks])
    fig.update_yaxes(rangemode="tozero")
    return fig


def instant_axis(stamps: Sequence[str], tz: ZoneInfo, interval: str) -> tuple[list[str], list[str], list[int]]:
    """Where a series' points go on a date axis, their labels, and which to tick.

    Plotly's date axes have no time zones, and the site's wall clock repeats an hour when it
    falls back: plotted by wall clock, the two 02:00 buckets would be one point. So the x of
    each point is its instant on a clock that keeps the first point's UTC offset throughout
    (distinct and evenly spaced); its label is the site's wall clock, with the offset when the
    series crosses a change, and only then are ticks placed by hand (about 12 at most).
    Returns (x, labels, indices of the points to tick; empty: Plotly's own ticks)."""
    moments = [dt.datetime.fromisoformat(t).astimezone(tz) for t in stamps]
    if interval == "day" or not moments:
        days = [m.strftime("%Y-%m-%d") for m in moments]
        return days, days, []
    first = moments[0].utcoffset() or dt.timedelta(0)
    x = [(m.astimezone(dt.UTC) + first).strftime("%Y-%m-%d %H:%M") for m in moments]
    if len({m.utcoffset() for m in moments}) == 1:
        return x, [m.strftime("%Y-%m-%d %H:%M") for m in moments], []
    labels = [f"{m:%Y-%m-%d %H:%M} ({_offset(m)})" for m in moments]
    every = max(1, -(-len(moments) // 12))
    return x, labels, list(range(0, len(moments), every))


def _offset(moment: dt.datetime) -> str:
    """The UTC offset as ``+01:00`` (strftime's ``%z`` has no colon)."""
    text = moment.strftime("%z")
    return f"{text[:3]}:{text[3:5]}"


def csv_name(site_id: str, dimension: str, start: dt.date, end: dt.date) -> str:
    """The download's file name: only characters that are safe in every file system."""
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in site_id)
    return f"footfall-{safe}-{dimension}-{start.isoformat()}-to-{end.isoformat()}.csv"
