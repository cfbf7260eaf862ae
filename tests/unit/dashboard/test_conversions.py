"""Goals, funnel and event-property rows and figures from hand-made query answers (pure)."""

from __future__ import annotations

import json

import plotly.utils
import pytest

from dashboard import conversion_panels, conversions, history, tables

XSS = "<img src=x onerror=alert(1)>"


def funnel_result(**steps_override: object) -> dict:
    """A funnel answer in the shape QueryService.funnel returns."""
    steps = [
        {"goal_id": "1", "name": "Pricing", "visitors": 200, "conversion_from_previous": None,
         "conversion_from_first": None, "median_ms_from_previous": None},
        {"goal_id": "2", "name": XSS, "visitors": 50, "conversion_from_previous": 0.25,
         "conversion_from_first": 0.25, "median_ms_from_previous": 95_000.0},
        {"goal_id": "3", "name": "Paid", "visitors": 10, "conversion_from_previous": 0.2,
         "conversion_from_first": 0.05, "median_ms_from_previous": 4_500.0},
    ]  # fmt: skip
    return {
        "site_id": "s", "funnel_id": "7", "name": "Buy", "window_minutes": 30, "strict": False,
        "from": "2026-10-01T00:00:00+00:00", "to": "2026-10-08T00:00:00+00:00", "tz": "UTC",
        "steps": steps, "sources": {"notes": []}, **steps_override,
    }  # fmt: skip


def test_goal_rows_carry_the_goal_id_and_say_what_reaches_it() -> None:
    body = {
        "visitors": 300,
        "results": [
            {"goal_id": "4", "kind": "page", "name": "Pricing", "path": "/pricing*", "event": "", "prop": "",
             "value": "", "events": 10, "visitors": 7, "conversion_rate": 0.023333},
            {"goal_id": "5", "kind": "event", "name": "", "path": "", "event": "signup", "prop": "plan",
             "value": "pro", "events": None, "visitors": None, "conversion_rate": None},
            {"goal_id": "6", "kind": "event", "name": "Paid", "event": "purchase", "revenue_prop": "amount",
             "currency_prop": "currency", "events": 4, "visitors": 2, "conversion_rate": 0.5,
             "revenue": {"currencies": [
                 {"currency": "EUR", "total": "20.29", "conversions": 2, "average": "10.145", "per_visitor": "5.0725"},
                 {"currency": "USD", "total": "5.50", "conversions": 1, "average": "5.50", "per_visitor": "1.375"},
             ], "without_revenue": 1}},
        ],
    }  # fmt: skip
    rows = conversions.goal_rows(body)
    none = {"revenue": "", "revenue_average": "", "revenue_per_visitor": ""}
    assert rows == [
        {"id": "4", "name": "Pricing", "definition": "page /pricing*", "events": 10, "visitors": 7,
         "conversion_rate": 0.023333} | none,
        {"id": "5", "name": "goal 5", "definition": "event signup where plan = pro", "events": None,
         "visitors": None, "conversion_rate": None} | none,
        {"id": "6", "name": "Paid", "definition": "event purchase, revenue amount in currency", "events": 4,
         "visitors": 2, "conversion_rate": 0.5, "revenue": "EUR 20.29, USD 5.50 (1 without revenue)",
         "revenue_average": "EUR 10.145, USD 5.50", "revenue_per_visitor": "EUR 5.0725, USD 1.375"},
    ]  # fmt: skip
    assert [c["id"] for c in conversions.GOAL_COLUMNS] == ["name", "definition", *list(rows[0])[3:]]


def test_goal_series_draws_conversions_and_uniques_and_leaves_uncounted_days_out() -> None:
    days = [
        {"day": "2026-10-01", "events": 3, "visitors": 2, "source": "batch"},
        {"day": "2026-10-02", "events": None, "visitors": None, "source": "missing"},
        {"day": "2026-10-03", "events": 5, "visitors": 5, "source": "realtime"},
    ]
    fig = conversions.goal_series_figure(days, "Pricing")
    bars, line = fig.data
    assert list(bars.x) == ["2026-10-01", "2026-10-02", "2026-10-03"]
    assert list(bars.y) == [3, None, 5]
    assert list(line.y) == [2, None, 5]
    empty = conversions.goal_series_figure([{**days[1]}], XSS)
    assert "&lt;img" in empty.layout.annotations[0].text


def test_funnel_figure_has_a_step_per_goal_with_conversions_and_median_times() -> None:
    fig = conversions.funnel_figure(funnel_result())
    (trace,) = fig.data
    assert trace.type == "funnel"
    assert list(trace.x) == [200, 50, 10]
    assert list(trace.y) == ["1. Pricing", "2. &lt;img src=x onerror=alert(1)&gt;", "3. Paid"]
    assert trace.text[1] == "50 · 25.0 % of previous · 25.0 % of first"
    assert trace.text[2] == "10 · 20.0 % of previous · 5.0 % of first"
    assert "median time from the previous step: 1m 35s" in trace.customdata[1]
    assert "median time from the previous step: 4.5s" in trace.customdata[2]
    assert XSS not in json.dumps(fig, cls=plotly.utils.PlotlyJSONEncoder)


def test_funnel_steps_of_one_name_stay_apart() -> None:
    """A goal used twice is two bars, not one category drawn once."""
    result = funnel_result()
    result["steps"][2]["name"] = "Pricing"
    assert len(set(conversions.funnel_figure(result).data[0].y)) == 3


def test_funnel_without_visitors_says_so_and_unknowns_show_as_dashes() -> None:
    result = funnel_result()
    for step in result["steps"]:
        step["visitors"] = 0
    assert "No visitor reached" in conversions.funnel_figure(result).layout.annotations[0].text
    result["steps"][1].update(conversion_from_previous=None, median_ms_from_previous=None)
    rows = conversions.funnel_rows(result)
    assert rows[0]["median_from_previous"] == ""  # the first step has no previous one
    assert rows[1]["median_from_previous"] == "—"
    assert conversions.funnel_figure({**result, "steps": []}).layout.annotations


def test_funnel_rows_and_caption() -> None:
    result = funnel_result()
    rows = conversions.funnel_rows(result)
    assert [r["step"] for r in rows] == ["1. Pricing", f"2. {XSS}", "3. Paid"]  # table cells are text
    assert [r["conversion_from_first"] for r in rows] == [None, 0.25, 0.05]
    assert [r["median_from_previous"] for r in rows] == ["", "1m 35s", "4.5s"]
    assert conversions.funnel_caption(result) == (
        "Steps in order, within 30 min of the first step; other pages and events allowed in between."
    )
    assert conversions.funnel_caption({"window_minutes": 0, "strict": True}) == (
        "Steps in order, within one session; nothing else in between."
    )


def test_event_property_rows_and_options_are_plain_values() -> None:
    names = {"results": [{"prop": XSS, "events": 3}, {"prop": "plan", "events": 2}]}
    assert conversions.property_options(names) == [{"label": XSS, "value": XSS}, {"label": "plan", "value": "plan"}]
    body = {"results": [{"value": XSS, "events": 4, "visitors": 3}], "total": 1}
    assert conversions.property_rows(body) == [{"id": XSS, "value": XSS, "events": 4, "visitors": 3}]


@pytest.mark.parametrize(
    ("dimension", "store", "metrics"),
    [
        ("events", None, ("events", "visitors")),
        ("pages", None, ("pageviews", "visitors", "time_on_page", "scroll_depth")),
        ("referrers", None, ("pageviews", "visitors", "engaged_time")),
        ("pages", "refpage", ("pageviews", "visitors")),  # a referrer's pages: no engagement per pair
        ("referrers", "refpage", ("pageviews", "visitors")),
        ("countries", None, ("pageviews", "visitors")),
    ],
)
def test_breakdown_columns_by_table(dimension: str, store: str | None, metrics: tuple[str, ...]) -> None:
    assert tables.breakdown_metrics(dimension, store) == metrics
    columns = tables.breakdown_columns(dimension, store)
    assert [c["id"] for c in columns] == ["value", *metrics]


def test_engagement_columns_are_numbers_with_units() -> None:
    """Numbers, so the table sorts them as numbers; durations in seconds, depth in percent."""
    columns = {c["id"]: c for c in tables.breakdown_columns("pages") + tables.breakdown_columns("referrers")}
    assert columns["time_on_page"]["name"] == "Time on page"
    assert columns["time_on_page"]["type"] == columns["scroll_depth"]["type"] == "numeric"
    assert columns["time_on_page"]["format"].to_plotly_json()["specifier"] == "$,.1f"  # $ places the symbol
    assert columns["time_on_page"]["format"].to_plotly_json()["locale"]["symbol"] == ["", " s"]
    assert columns["scroll_depth"]["format"].to_plotly_json()["locale"]["symbol"] == ["", " %"]
    assert columns["engaged_time"]["name"] == "Engaged time"


def test_history_page_has_the_conversion_panels() -> None:
    page = json.dumps(history.page(conversion_panels.panels()), cls=plotly.utils.PlotlyJSONEncoder)
    for component in ("hist-goals", "hist-goal-series", "hist-funnel", "hist-funnel-chart", "hist-prop-table"):
        assert f'"id": "{component}"' in page
    assert '"id": "hist-goals"' not in json.dumps(history.page(), cls=plotly.utils.PlotlyJSONEncoder)
