"""Small PNG charts for emails (spike alerts, reports).

Email clients show neither scripts nor SVG reliably, so the chart is a PNG attached inline.
matplotlib draws it through its Agg canvas on a :class:`~matplotlib.figure.Figure` made per
call (not pyplot, whose global state is not safe across a worker's threads).
"""

from __future__ import annotations

import datetime as dt
import io
from collections.abc import Sequence

WIDTH_IN, HEIGHT_IN, DPI = 6.0, 2.2, 100  # 600 x 220 px: fits a mail column on a phone
LINE, FILL, MARK = "#2563eb", "#dbeafe", "#dc2626"


def series_png(
    points: Sequence[tuple[dt.datetime, float]],
    *,
    title: str,
    ylabel: str = "visitors",
    highlight_from: dt.datetime | None = None,
) -> bytes:
    """A line chart of ``points`` (time, value; in time order) as PNG bytes; the part from
    ``highlight_from`` on (e.g. a spike's window) is shaded. Raises ValueError on no points."""
    if not points:
        raise ValueError("a chart needs at least one point")
    # Imported here, not with the module: the web processes import the mail modules (the
    # unsubscribe view) but never draw, and matplotlib is a large import they would carry.
    from matplotlib.dates import AutoDateLocator, ConciseDateFormatter
    from matplotlib.figure import Figure

    times = [t for t, _ in points]
    values = [v for _, v in points]
    fig = Figure(figsize=(WIDTH_IN, HEIGHT_IN), dpi=DPI)
    ax = fig.add_subplot()
    ax.fill_between(times, values, color=FILL, linewidth=0)
    ax.plot(times, values, color=LINE, linewidth=1.6)
    if highlight_from is not None and highlight_from <= times[-1]:
        ax.axvspan(max(highlight_from, times[0]), times[-1], color=MARK, alpha=0.12, linewidth=0)
    locator = AutoDateLocator(minticks=3, maxticks=7, tz=times[0].tzinfo)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(ConciseDateFormatter(locator, tz=times[0].tzinfo))
    ax.set_ylim(bottom=0, top=max(max(values) * 1.1, 1))
    ax.set_title(title, fontsize=10, loc="left")
    ax.set_ylabel(ylabel, fontsize=8)
    ax.tick_params(labelsize=8)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.grid(axis="y", color="#e5e7eb", linewidth=0.6)
    fig.tight_layout()
    out = io.BytesIO()
    fig.savefig(out, format="png", metadata={"Software": None})  # no version stamp: same input, same bytes
    return out.getvalue()
