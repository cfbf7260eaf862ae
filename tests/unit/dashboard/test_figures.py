"""Pure figure and formatting functions of the dashboard."""

from __future__ import annotations

from zoneinfo import ZoneInfo

import pytest

from dashboard import figures

NY = ZoneInfo("America/New_York")


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
        ('<a href="javascript:x">y</a>', '&lt;a href="javascript:x"&gt;y&lt;/a&gt;'),
        ("a & b<br>c", "a &amp; b&lt;br&gt;c"),
        (None, ""),
    ],
)
def test_plot_text_escapes_markup(raw: str | None, shown: str) -> None:
    """Plotly renders a subset of HTML in labels: traffic values are escaped to literal text."""
    assert figures.plot_text(raw) == shown


def test_plot_text_shortens_before_escaping() -> None:
    """Long labels are cut (with an ellipsis) and never leave half an entity."""
    assert figures.plot_text("/" + "x" * 100, limit=10) == "/xxxxxxxx…"
    assert figures.plot_text("<" * 20, limit=5) == "&lt;" * 4 + "…"


def test_sankey_keeps_referrers_and_pages_apart_and_escapes() -> None:
    """A referrer and a page with the same text are distinct nodes; labels and hovers are escaped."""
    flows = [
        {"referrer": "google.com", "page": "/", "pageviews": 5},
        {"referrer": "google.com", "page": "google.com", "pageviews": 2},
        {"referrer": "<b>x</b>", "page": "/", "pageviews": 1},
        {"referrer": "t.co", "page": "/zero", "pageviews": 0},
    ]
    (sankey,) = figures.flow_sankey(flows).data
    assert list(sankey.node.label) == ["google.com", "&lt;b&gt;x&lt;/b&gt;", "/", "google.com"]
    assert list(sankey.link.source) == [0, 0, 1]
    assert list(sankey.link.target) == [2, 3, 2]
    assert list(sankey.link.value) == [5, 2, 1]
    assert "&lt;b&gt;x&lt;/b&gt; → /" in sankey.link.customdata


def test_empty_inputs_give_figures_that_say_so() -> None:
    """No flows, no page views, no points: a blank chart with a message, not an error."""
    quiet = [{"t": "2026-11-01T10:00:00+00:00", "value": 0}]
    empty = [
        figures.flow_sankey([]),
        figures.pageviews_per_minute(quiet, NY),
        figures.metric_series([], "pageviews", NY, "day"),
    ]
    for fig in empty:
        assert fig.data == ()
        assert fig.layout.annotations[0].text.startswith("No ")


def test_per_minute_bars_are_in_site_time() -> None:
    """Plotly has no time zones: the x values are the site's wall-clock minutes."""
    fig = figures.pageviews_per_minute([{"t": "2026-11-01T14:05:00+00:00", "value": 3}], NY)
    assert list(fig.data[0].x) == ["2026-11-01 09:05"]  # EST after the DST change that night
    assert list(fig.data[0].y) == [3]


def test_metric_series_overlays_the_previous_period_on_the_same_days() -> None:
    """The previous period is drawn first, on the current period's x, and bounce rates in percent."""
    points = [{"t": "2026-11-02T00:00:00-05:00", "value": 0.5}, {"t": "2026-11-03T00:00:00-05:00", "value": None}]
    previous = [{"t": "2026-10-31T00:00:00-04:00", "value": 0.25}, {"t": "2026-11-01T00:00:00-04:00", "value": 1.0}]
    fig = figures.metric_series(points, "bounce_rate", NY, "day", previous)
    before, now = fig.data
    assert list(now.x) == ["2026-11-02", "2026-11-03"] == list(before.x)
    assert list(now.y) == [50.0, None]
    assert list(before.y) == [25.0, 100.0]
    assert list(before.customdata) == ["2026-10-31", "2026-11-01"]


@pytest.mark.parametrize(
    ("metric", "value", "shown"),
    [
        ("pageviews", 1234567, "1,234,567"),
        ("visitors", None, "—"),
        ("bounce_rate", 0.4567, "45.7 %"),
        ("visit_duration", 42.4, "42s"),
        ("visit_duration", 125, "2m 05s"),
        ("visit_duration", 7260, "2h 01m"),
        ("sessions", 12.0, "12"),
    ],
)
def test_fmt_metric(metric: str, value: object, shown: str) -> None:
    assert figures.fmt_metric(metric, value) == shown


def test_fmt_change_tones() -> None:
    """A rise is good news, except for the bounce rate; no previous data says so."""
    assert figures.fmt_change(0.125) == ("+12.5 %", "up")
    assert figures.fmt_change(-0.5) == ("-50.0 %", "down")
    assert figures.fmt_change(0.1, "bounce_rate") == ("+10.0 %", "down")
    assert figures.fmt_change(0.0) == ("±0.0 %", "flat")
    assert figures.fmt_change(None) == ("no previous data", "none")


def test_csv_name_is_safe() -> None:
    import datetime as dt

    name = figures.csv_name("../a b", "pages", dt.date(2026, 11, 1), dt.date(2026, 11, 7))
    assert name == "footfall-___a_b-pages-2026-11-01-to-2026-11-07.csv"


def test_the_repeated_hour_is_two_points() -> None:
    """Berlin's fall-back day: the two 02:00 buckets get distinct x, evenly spaced, and labels
    that say which is which."""
    berlin = ZoneInfo("Europe/Berlin")
    stamps = ["2026-10-25T01:00:00+02:00", "2026-10-25T02:00:00+02:00", "2026-10-25T02:00:00+01:00",
              "2026-10-25T03:00:00+01:00"]  # fmt: skip
    x, labels, ticks = figures.instant_axis(stamps, berlin, "hour")
    assert x == ["2026-10-25 01:00", "2026-10-25 02:00", "2026-10-25 03:00", "2026-10-25 04:00"]
    assert labels[1:3] == ["2026-10-25 02:00 (+02:00)", "2026-10-25 02:00 (+01:00)"]
    assert ticks == [0, 1, 2, 3]
    points = [{"t": t, "value": n} for n, t in enumerate(stamps)]
    fig = figures.metric_series(points, "pageviews", berlin, "hour")
    assert len(set(fig.data[0].x)) == 4


def test_without_a_change_points_sit_on_the_wall_clock() -> None:
    x, labels, ticks = figures.instant_axis(["2026-11-02T07:00:00-05:00", "2026-11-02T08:00:00-05:00"], NY, "hour")
    assert x == labels == ["2026-11-02 07:00", "2026-11-02 08:00"]
    assert ticks == []
