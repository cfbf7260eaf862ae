"""The pure alert rule logic: verdicts, hysteresis, peaks and the episode's details."""

from __future__ import annotations

import datetime as dt

import pytest

from alerts import models
from alerts.rules import HYSTERESIS, Reading, RuleSpec, Verdict, details, further, judge, limit, series_points


def rule(kind: str, threshold: float, **kw: object) -> RuleSpec:
    return RuleSpec("s1", "r", kind, threshold, **kw)  # type: ignore[arg-type]


def test_kinds_match_the_models() -> None:
    """rules.py spells the kinds itself (no Django there): they must be the models' kinds."""
    from alerts import rules

    assert {k for k, _ in models.RULE_KINDS} == {rules.SPIKE, rules.DROP, rules.GOAL, rules.REALTIME_LAG,
                                                 rules.ARCHIVER_LAG, rules.ROLLUP, rules.DRIFT}  # fmt: skip


@pytest.mark.parametrize("kind", ["spike", "realtime_lag", "archiver_lag", "rollup", "drift"])
def test_above_kinds_open_at_the_threshold_and_clear_below_the_hysteresis(kind: str) -> None:
    r = rule(kind, 10.0)
    assert judge(r, Reading(9.99), is_open=False) is Verdict.CLEARS
    assert judge(r, Reading(10.0), is_open=False) is Verdict.HOLDS
    assert judge(r, Reading(9.5), is_open=True) is Verdict.HOLDS  # hovering: the episode stays open
    assert judge(r, Reading(10 * (1 - HYSTERESIS)), is_open=True) is Verdict.CLEARS


def test_drop_compares_with_a_share_of_the_usual_level() -> None:
    r = rule("drop", 0.5)
    assert limit(r, Reading(10, usual=100)) == 50
    assert judge(r, Reading(49, usual=100), is_open=False) is Verdict.HOLDS
    assert judge(r, Reading(50, usual=100), is_open=False) is Verdict.CLEARS
    assert judge(r, Reading(54, usual=100), is_open=True) is Verdict.HOLDS
    assert judge(r, Reading(55.01, usual=100), is_open=True) is Verdict.CLEARS
    assert judge(r, Reading(0, usual=None), is_open=False) is Verdict.UNKNOWN


def test_goal_below_a_level_and_zero_threshold_never_fires() -> None:
    assert judge(rule("goal", 5), Reading(4), is_open=False) is Verdict.HOLDS
    assert judge(rule("goal", 0), Reading(0), is_open=False) is Verdict.CLEARS


def test_unknown_figure_changes_nothing_and_forced_holds() -> None:
    assert judge(rule("spike", 3), Reading(None, "too little history"), is_open=True) is Verdict.UNKNOWN
    assert judge(rule("rollup", 6), Reading(1.0, forced=True), is_open=False) is Verdict.HOLDS


def test_peak_is_the_furthest_past_the_threshold() -> None:
    assert further(rule("spike", 3), 4.0, 7.0) == 7.0
    assert further(rule("drop", 0.5), 4.0, 7.0) == 4.0


def test_spike_details_follow_the_contract() -> None:
    t = dt.datetime(2026, 11, 26, 10, 5, tzinfo=dt.UTC)
    reading = Reading(
        6.25,
        subject="/pricing",
        extra={"recent": 120, "mean": 20.0, "top_referrers": [{"value": "news.example", "visitors": 80}],
               "top_pages": [{"value": "/pricing", "visitors": 100}], "series": series_points([(t, 3.0)])},
    )  # fmt: skip
    got = details(rule("spike", 3, window_minutes=10, scope="page"), reading, "/dashboard/?site=s1")
    assert got["metric"] == "z_score"
    assert got["value"] == 6.25
    assert got["threshold"] == 3.0
    assert got["window_minutes"] == 10
    assert got["subject"] == "/pricing"
    assert got["top_referrers"][0] == {"value": "news.example", "visitors": 80}
    assert got["series"] == [{"t": "2026-11-26T10:05:00Z", "v": 3.0}]
    assert "/pricing" in got["summary"]
    assert "120 page views" in got["summary"]


def test_pipeline_details_have_no_window_and_name_the_day() -> None:
    got = details(rule("rollup", 6), Reading(9.0, forced=True, subject="2026-11-25"), "/dashboard/health?site=s1")
    assert got["window_minutes"] is None
    assert got["metric"] == "hours_late"
    assert got["summary"] == "The nightly rollup of 2026-11-25 failed."
    drift = details(rule("drift", 2), Reading(4.25, subject="2026-11-24"), "/dashboard/health?site=s1")
    assert "4.2 %" in drift["summary"] or "4.3 %" in drift["summary"]
