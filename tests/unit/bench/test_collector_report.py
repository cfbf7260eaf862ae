"""The collector bench's report: paired per-round ratios, the A/A control and the goals' verdicts."""

from __future__ import annotations

import pytest

from bench import collector_bench


def _run(rps: float, cpu: float = 1.0, produced: int = 0, expected: int = 0) -> dict:
    return {
        "rps": rps, "p50_ms": 10.0, "p99_ms": 20.0, "requests": int(rps * 10), "statuses": {200: int(rps * 10)},
        "non_2xx": 0, "socket_errors": {}, "cpu_s": {}, "others_cpu_share": 0.0, "server_cpu_ms_per_req": cpu,
        "kafka_cpu_ms_per_req": None, "events_produced": produced, "events_expected": expected,
    }  # fmt: skip


def _doc(a: float, b: float, a2: float, empty: float = 1000.0, collect: float = 900.0) -> dict:
    runs = {
        "A_page": [_run(a)] * 3,
        "B_page": [_run(b)] * 3,
        "A2_page": [_run(a2)] * 3,
        "A_empty": [_run(empty)] * 3,
        "A_collect": [_run(collect)] * 3,
    }
    return collector_bench.build({}, runs, connections=32)


@pytest.mark.parametrize(
    ("a", "b", "a2", "verdict"),
    [
        (1000.0, 960.0, 1000.0, "PASS"),  # B within 5 % of both twins
        (1000.0, 900.0, 1000.0, "FAIL"),  # 10 % short of both
        (1000.0, 955.0, 1010.0, "UNRESOLVED"),  # passes against A, fails against its twin
        (1010.0, 955.0, 1000.0, "UNRESOLVED"),  # and the other way round
        (900.0, 1000.0, 960.0, "UNRESOLVED"),  # passes against both, but A and A2 are 6.7 % apart
    ],
)
def test_middleware_verdict_needs_both_baselines_to_agree(a: float, b: float, a2: float, verdict: str) -> None:
    doc = _doc(a, b, a2)
    assert doc["verdicts"]["middleware"] == verdict
    assert doc["ratios"]["middleware"]["value"] == pytest.approx(b / a, abs=1e-4)
    assert doc["ratios"]["middleware_a2"]["value"] == pytest.approx(b / a2, abs=1e-4)


def test_value_is_the_median_of_paired_rounds() -> None:
    """A VM that changes speed between rounds: each round's B is compared with that round's A."""
    runs = {
        "A_page": [_run(1000.0), _run(1100.0), _run(2000.0)],
        "B_page": [_run(1900.0), _run(1000.0), _run(1050.0)],
        "A2_page": [_run(1000.0), _run(1100.0), _run(2000.0)],
        "A_empty": [_run(1000.0)] * 3,
        "A_collect": [_run(900.0)] * 3,
    }
    ratio = collector_bench.build({}, runs, connections=32)["ratios"]["middleware"]
    assert ratio["per_round"] == pytest.approx([1.9, 1000 / 1100, 0.525], abs=1e-4)
    assert ratio["value"] == pytest.approx(1000 / 1100, abs=1e-4)  # not 1050 / 1100, the medians' ratio
    assert ratio["of_medians"] == pytest.approx(1050 / 1100, abs=1e-4)
    assert ratio["pass"] is False


def test_control_is_a2_over_a_with_no_goal() -> None:
    control = _doc(1000.0, 960.0, 1050.0)["ratios"]["control"]
    assert control["of"] == "A2_page / A_page"
    assert control["value"] == pytest.approx(1.05)
    assert control["goal"] is None
    assert control["pass"] is None


def test_beacon_verdict_follows_its_one_ratio() -> None:
    assert _doc(1000.0, 960.0, 1000.0, empty=1000.0, collect=810.0)["verdicts"]["beacon"] == "PASS"
    assert _doc(1000.0, 960.0, 1000.0, empty=1000.0, collect=790.0)["verdicts"]["beacon"] == "FAIL"


def test_report_prints_the_verdicts(capsys: pytest.CaptureFixture[str]) -> None:
    collector_bench.print_table(_doc(1000.0, 955.0, 1010.0))
    out = capsys.readouterr().out
    assert "goal middleware: UNRESOLVED" in out
    assert "goal beacon: PASS" in out
    assert "A/A" in out
