"""Results of the collector benchmark: medians, ratios against the goals, the Kafka event
check, a table for people and JSON for machines (``artifacts/bench/collector.json``)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

NOISY = 0.10  # above this median share of the machine's CPU used by others, req/s ratios are suspect
GOALS = {
    "middleware": ("B_page", "A_page", 0.95),  # B(/bench/page) / A(/bench/page)
    "middleware_a2": ("B_page", "A2_page", 0.95),  # the same goal against A's twin
    "beacon": ("A_collect", "A_empty", 0.80),  # C(POST /collect) / C(/bench/empty)
}
# A/A: two identical servers, same page. No goal: how far apart the instrument puts two
# servers that differ in nothing; a goal's margin smaller than that distance is not resolved.
CONTROLS = {"control": ("A2_page", "A_page")}
# A goal is met in a run when every ratio measuring it passes, missed when none does, and
# unresolved when they disagree: A and A2 are the same server, so a verdict that depends on
# which of them B is compared with is the instrument's, not the middleware's. It is also
# unresolved when the run's control is further from 1.00 than the goal's margin.
VERDICTS: dict[str, tuple[tuple[str, ...], str | None]] = {
    "middleware": (("middleware", "middleware_a2"), "control"),
    "beacon": (("beacon",), None),
}


def _median(runs: Sequence[Mapping], key: str) -> float | None:
    values = [r[key] for r in runs if r.get(key) is not None]
    return round(statistics.median(values), 4) if values else None


def kafka_check(produced: int, expected: int, tracked: bool, slack: int) -> str:
    """Whether the events on Kafka match the 2xx answers wrk counted.

    wrk stops counting at the deadline while up to one request per connection is still
    being served, so a tracked variant may show up to ``slack`` events more than answers.
    """
    diff = produced - expected
    if not tracked:
        return "ok" if diff == 0 else f"{diff:+d} unexpected (another producer on the topic?)"
    if diff < 0:
        return f"{-diff} missing (dropped, spooled or lost)"
    return "ok" if diff == 0 else ("ok, in flight at the deadline" if diff <= slack else f"{diff:+d} unexplained")


def build(config: dict, runs: Mapping[str, list[dict]], order: Sequence[str], connections: int) -> dict:
    """The result document."""
    variants = {}
    for key in order:
        rs = runs[key]
        produced = sum(r["events_produced"] for r in rs)
        expected = sum(r["events_expected"] for r in rs)
        tracked = any(r["events_expected"] for r in rs)
        variants[key] = {
            "median_rps": _median(rs, "rps"),
            "median_p50_ms": _median(rs, "p50_ms"),
            "median_p99_ms": _median(rs, "p99_ms"),
            "median_server_cpu_ms_per_req": _median(rs, "server_cpu_ms_per_req"),
            "non_2xx": sum(r["non_2xx"] for r in rs),
            "socket_errors": sum(sum(r["socket_errors"].values()) for r in rs),
            "events_produced": produced,
            "events_expected": expected,
            "kafka_check": kafka_check(produced, expected, tracked, connections * len(rs)),
            "runs": rs,
        }
    ratios = {}
    controls = {name: (top, bottom, None) for name, (top, bottom) in CONTROLS.items()}
    for name, (top, bottom, goal) in {**GOALS, **controls}.items():
        ratios[name] = _ratio(variants[top], variants[bottom], f"{top} / {bottom}", goal)
    verdicts = {}
    for goal_name, (names, control) in VERDICTS.items():
        verdicts[goal_name] = verdict([ratios[n] for n in names], ratios[control] if control else None)
    shares = [r["others_cpu_share"] for rs in runs.values() for r in rs]
    noise = statistics.median(shares) if shares else 0.0
    warnings = []
    if noise > NOISY:
        warnings.append(
            f"other processes used {noise:.0%} of the machine's CPU during the runs (median): the req/s ratios "
            "are unreliable; the CPU ratios are the steadier estimate"
        )
    warnings += [
        f"{k}: events on Kafka {v['kafka_check']}" for k, v in variants.items() if not v["kafka_check"].startswith("ok")
    ]
    failures = [f"{k}: {v['non_2xx']} non-2xx answers" for k, v in variants.items() if v["non_2xx"]]
    failures += [f"{k}: {v['socket_errors']} socket errors" for k, v in variants.items() if v["socket_errors"]]
    return {"benchmark": "collector", "config": config, "variants": variants, "ratios": ratios,
            "verdicts": verdicts, "others_cpu_share": round(noise, 3), "warnings": warnings, "failures": failures,
            "ok": not failures}  # fmt: skip


def verdict(measured: Sequence[Mapping], control: Mapping | None) -> str:
    """PASS when every ratio in ``measured`` meets its goal, FAIL when none does, UNRESOLVED
    when they disagree or when ``control`` (an A/A ratio) is off 1.00 by more than the margin."""
    if control is not None and abs(control["value"] - 1.0) > min(1.0 - r["goal"] for r in measured):
        return "UNRESOLVED"
    passes = {r["pass"] for r in measured}
    return "UNRESOLVED" if len(passes) > 1 else "PASS" if passes == {True} else "FAIL"


def _ratio(top: Mapping, bottom: Mapping, of: str, goal: float | None) -> dict:
    """``top``'s req/s over ``bottom``'s: ``value`` is the median of the per-round ratios, the
    two variants of a round having run next to each other (rounds alternate the variants),
    so a VM that changes speed between rounds moves both. ``of_medians`` (median over median)
    pairs numbers from different rounds. ``pass`` is ``None`` for a control (no goal)."""
    per_round = [x["rps"] / y["rps"] for x, y in zip(top["runs"], bottom["runs"], strict=True)]
    value = statistics.median(per_round)
    cpu_t, cpu_b = top["median_server_cpu_ms_per_req"], bottom["median_server_cpu_ms_per_req"]
    return {
        "of": of,
        "value": round(value, 4),
        "of_medians": round(top["median_rps"] / bottom["median_rps"], 4),
        "goal": goal,
        "pass": None if goal is None else value >= goal,
        "per_round": [round(r, 4) for r in per_round],
        # What the ratio would be if the server had the machine to itself: the inverse
        # ratio of server CPU per request (informational; B's includes its tracker thread).
        "server_cpu_ratio": round(cpu_b / cpu_t, 4) if cpu_t and cpu_b else None,
    }


def print_table(doc: Mapping, endpoints: Mapping[str, str]) -> None:
    """The results table on stdout."""
    print(f"\n{'variant':<10} {'endpoint':<18} {'req/s':>6}  {'per round':<18} {'p50 ms':>6} {'p99 ms':>6}"
          f" {'non-2xx':>7} {'CPU ms/req':>10}  events on Kafka / 2xx tracked")  # fmt: skip
    for key, res in doc["variants"].items():
        rounds = " ".join(f"{r['rps']:.0f}" for r in res["runs"])
        print(f"{key:<10} {endpoints[key]:<18} {res['median_rps']:6.0f}  {rounds:<18} {res['median_p50_ms']:6.1f}"
              f" {res['median_p99_ms']:6.1f} {res['non_2xx']:7d} {res['median_server_cpu_ms_per_req']:10.3f}"
              f"  {res['events_produced']} / {res['events_expected']}: {res['kafka_check']}")  # fmt: skip
    print(f"\n{'ratio':<13} {'of req/s':<22} {'median':>6} {'goal':>5}  result  {'per round':<32} "
          "of medians  CPU ratio")  # fmt: skip
    for name, r in doc["ratios"].items():
        rounds = " ".join(f"{v:.3f}" for v in r["per_round"])
        cpu = "-" if r["server_cpu_ratio"] is None else f"{r['server_cpu_ratio']:.3f}"
        goal = "-" if r["goal"] is None else f"{r['goal']:.2f}"
        result = "A/A" if r["pass"] is None else "PASS" if r["pass"] else "FAIL"
        print(f"{name:<13} {r['of']:<22} {r['value']:6.3f} {goal:>5}  {result:<6}  {rounds:<32} "
              f"{r['of_medians']:10.3f}  {cpu}")  # fmt: skip
    print()
    for name, outcome in doc["verdicts"].items():
        print(f"goal {name}: {outcome}")
    for warning in doc["warnings"]:
        print(f"\nWARNING: {warning}")
    print(f"\nbenchmark FAILED: {'; '.join(doc['failures'])}" if doc["failures"] else "\nbenchmark completed")
