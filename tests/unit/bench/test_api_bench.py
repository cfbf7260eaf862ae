"""The API bench's pure helpers for --alert-checks: the phase plan, Celery's log line, the sums."""

from __future__ import annotations

import pytest

from bench.api_bench import (
    _TASK_DONE,
    CheckRun,
    Segment,
    checks_reading,
    checks_summary,
    phase_at,
    phase_totals,
    plan_segments,
)


def test_without_checks_the_load_is_one_segment() -> None:
    assert plan_segments(100.0, 180.0, 2, alert_checks=False) == [Segment("load", 100.0, 280.0)]


def test_phases_alternate_and_every_other_round_is_reversed() -> None:
    segments = plan_segments(100.0, 360.0, 2, alert_checks=True)
    assert [s.phase for s in segments] == ["without", "with", "with", "without"]
    assert [(s.start, s.end) for s in segments] == [(100.0, 190.0), (190.0, 280.0), (280.0, 370.0), (370.0, 460.0)]
    three = plan_segments(0.0, 60.0, 3, alert_checks=True)
    assert [s.phase for s in three] == ["without", "with", "with", "without", "without", "with"]
    assert sum(s.end - s.start for s in three if s.phase == "with") == pytest.approx(30.0)


def test_phase_at_leaves_out_the_warm_up_and_the_end() -> None:
    segments = plan_segments(10.0, 40.0, 1, alert_checks=True)
    assert [phase_at(segments, t) for t in (9.99, 10.0, 29.99, 30.0, 49.99, 50.0)] == [
        None, "without", "without", "with", "with", None,
    ]  # fmt: skip


def test_celery_success_and_failure_lines_are_recognised() -> None:
    ok = (
        "[2026-11-26 22:01:31,301: INFO/ForkPoolWorker-2] Task alerts.tasks.check_alerts[api-bench-0a1b] "
        "succeeded in 0.2841s: {'quiet': 13, 'unknown': 4, 'kept': 3}"
    )
    m = _TASK_DONE.search(ok)
    assert m is not None
    assert (m["id"], m["s"], m["ret"]) == (
        "api-bench-0a1b",
        "0.2841",
        "{'quiet': 13, 'unknown': 4, 'kept': 3}",
    )
    failed = (
        "[...: ERROR/ForkPoolWorker-1] Task alerts.tasks.check_alerts[api-bench-0a1c] raised unexpected: KeyError()"
    )
    m = _TASK_DONE.search(failed)
    assert m is not None
    assert m["id"] == "api-bench-0a1c"
    assert m["s"] is None
    other = "[...: INFO/ForkPoolWorker-1] Task alerts.tasks.send_delivery[5f] succeeded in 0.01s: 'sent'"
    assert _TASK_DONE.search(other) is None


def test_phase_totals_sum_the_segments_of_each_phase() -> None:
    marks = [
        {"phase": "without", "at": 0.0, "server_cpu_s": 0.0, "worker_cpu_s": 0.0, "loadavg": 2.0, "stores_cpu_s": 5.0},
        {"phase": "with", "at": 10.0, "server_cpu_s": 1.0, "worker_cpu_s": 0.01, "loadavg": 2.5, "stores_cpu_s": 5.2},
        {"phase": "with", "at": 20.0, "server_cpu_s": 2.2, "worker_cpu_s": 0.51, "loadavg": 3.0, "stores_cpu_s": 5.8},
        {
            "phase": "without",
            "at": 30.0,
            "server_cpu_s": 3.4,
            "worker_cpu_s": 1.01,
            "loadavg": 3.5,
            "stores_cpu_s": 6.6,
        },
        {"phase": "end", "at": 40.0, "server_cpu_s": 4.4, "worker_cpu_s": 1.03, "loadavg": 3.0, "stores_cpu_s": 6.8},
    ]
    samples = [("realtime 30m", 0.01, 200, "without")] * 200 + [("realtime 30m", 0.01, 200, "with")] * 240
    totals = phase_totals(marks, samples)
    assert set(totals) == {"without", "with"}
    assert totals["without"]["seconds"] == 20.0
    assert totals["without"]["requests"] == 200
    assert totals["without"]["server_cpu_ms_per_request"] == pytest.approx(10.0)
    assert totals["without"]["worker_cpu_ms_per_s"] == pytest.approx(1.5)
    assert totals["with"]["server_cpu_ms_per_request"] == pytest.approx(10.0)
    assert totals["with"]["worker_cpu_ms_per_s"] == pytest.approx(50.0)
    assert totals["without"]["stores_cpu_ms_per_s"] == pytest.approx(20.0)
    assert totals["with"]["stores_cpu_ms_per_s"] == pytest.approx(70.0)
    assert totals["with"]["loadavg"] == [2.5, 3.0]


def test_checks_summary_scales_the_cpu_per_run_to_once_a_minute() -> None:
    runs = [CheckRun(0.0, 200.0, 230.0, 120.0, {"quiet": 18, "kept": 2}),
            CheckRun(10.0, 400.0, 420.0, 180.0, {"quiet": 19, "resolved": 1})]  # fmt: skip
    first = CheckRun(-5.0, 1500.0, 4000.0, 2500.0, {"quiet": 20})
    summary = checks_summary(runs, first, 10.0, 20)
    assert summary["runs"] == 2
    assert summary["wall_ms"]["mean_ms"] == pytest.approx(300.0)
    assert summary["cpu_ms"]["mean_ms"] == pytest.approx(150.0)
    assert summary["production_cpu_pct_of_one_cpu"] == pytest.approx(0.25)  # 150 ms a minute
    assert summary["outcomes"] == {"quiet": 37, "kept": 2, "resolved": 1}
    line = checks_reading(summary)
    assert line.startswith("checks every 10 s (beat: once a minute): 2 runs of 20 rules, mean wall 300 ms")
    assert "CPU 150 ms per run (0.25 % of one CPU at the production rate of once a minute)" in line


def test_no_finished_run_is_said_so() -> None:
    assert "no run finished" in checks_reading(checks_summary([], None, 10.0, 20))
