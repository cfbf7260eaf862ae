"""From a rule and the figure measured for it to a verdict and an episode's details: pure.

A rule *holds* when its figure is past the threshold: at or above it for spike, lag, rollup
and drift rules, below it for drop and goal rules. A drop rule's threshold is a share of the
usual level, so the figure is compared with ``threshold * usual``.

Hysteresis: an open episode resolves only once the figure is back past the threshold by
:data:`HYSTERESIS` (10 %) of it, e.g. a spike rule at z 3 opens at 3 and resolves under
2.7, a drop rule at 50 visitors opens under 50 and resolves at 55 or more. A figure that
hovers at the threshold therefore holds one episode open instead of opening one a minute.

A figure that cannot be judged (too little history, nothing to compare with) is
``value=None`` with a reason: the rule's state stays as it is.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

# The kinds of :data:`alerts.models.RULE_KINDS`, spelled here so this module needs no Django.
SPIKE, DROP, GOAL, REALTIME_LAG, ARCHIVER_LAG, ROLLUP, DRIFT = (
    "spike", "drop", "goal", "realtime_lag", "archiver_lag", "rollup", "drift",
)  # fmt: skip

HYSTERESIS = 0.1
BELOW_KINDS = frozenset({DROP, GOAL})
METRICS = {
    SPIKE: "z_score",  # a spike's value and threshold are spreads above the usual; "recent"/"usual" the counts
    DROP: "visitors",
    GOAL: "conversions",
    REALTIME_LAG: "lag_s",
    ARCHIVER_LAG: "lag_events",
    ROLLUP: "hours_late",
    DRIFT: "drift_pct",
}


class Verdict(Enum):
    HOLDS = "holds"
    CLEARS = "clears"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class RuleSpec:
    """What the rule logic needs of an :class:`alerts.models.AlertRule` (no ORM here)."""

    site_id: str
    name: str
    kind: str
    threshold: float
    window_minutes: int = 60
    scope: str = ""
    value: str = ""
    goal_name: str = ""


@dataclass(frozen=True, slots=True)
class Reading:
    """One measurement of a rule's figure.

    ``value`` is the figure (a z-score for spikes), None when it cannot be judged (``reason``
    says why). ``usual`` is a drop rule's usual level (visitors of the window). ``forced``
    holds whatever the threshold (a rollup that failed). ``subject`` is what the figure is
    of (``site``, a page, a referrer, a goal name, a day); ``extra`` carries the lists of
    the details (``top_referrers``, ``top_pages``, ``series``) and any figure the summary
    names (``recent``: a spike's page views in the window, ``mean``: its usual level)."""

    value: float | None
    reason: str = ""
    usual: float | None = None
    forced: bool = False
    subject: str = "site"
    extra: dict[str, Any] = field(default_factory=dict)


def limit(rule: RuleSpec, reading: Reading) -> float | None:
    """The figure past which the rule holds: the threshold, or for a drop rule the threshold's
    share of the usual level (None without one)."""
    if rule.kind == DROP:
        return None if reading.usual is None else rule.threshold * reading.usual
    return rule.threshold


def judge(rule: RuleSpec, reading: Reading, is_open: bool) -> Verdict:
    """Whether the condition holds now; an open episode needs the figure back past the
    threshold by :data:`HYSTERESIS` of it to clear."""
    if reading.forced:
        return Verdict.HOLDS
    bound = limit(rule, reading)
    if reading.value is None or bound is None:
        return Verdict.UNKNOWN
    value = reading.value
    if rule.kind in BELOW_KINDS:
        holds = value < bound * (1 + HYSTERESIS) if is_open else value < bound
    else:
        holds = value > bound * (1 - HYSTERESIS) if is_open else value >= bound
    return Verdict.HOLDS if holds else Verdict.CLEARS


def further(rule: RuleSpec, a: float, b: float) -> float:
    """The one of two figures further past the threshold (an episode's peak)."""
    return min(a, b) if rule.kind in BELOW_KINDS else max(a, b)


def _num(x: float) -> str:
    return f"{x:,.0f}" if abs(x - round(x)) < 1e-9 or abs(x) >= 100 else f"{x:,.1f}"


def summary(rule: RuleSpec, reading: Reading) -> str:
    """One human sentence saying what holds."""
    v, t, w, subject = reading.value or 0.0, rule.threshold, rule.window_minutes, reading.subject
    where = "the site" if subject == "site" else subject
    if rule.kind == SPIKE:
        recent, mean = reading.extra.get("recent", 0), reading.extra.get("mean", 0.0)
        return (
            f"Traffic spike on {where}: {_num(recent)} page views in the last {w} min against a usual "
            f"{_num(mean)}, z-score {v:.1f} (alert at {_num(t)})."
        )
    if rule.kind == DROP:
        usual = reading.usual or 0.0
        share = f"{v / usual:.0%}" if usual else "none"
        return (
            f"Traffic drop on {where}: {_num(v)} visitors in the last {w} min, {share} of the usual "
            f"{_num(usual)} for this hour of the week (alert below {t:.0%})."
        )
    if rule.kind == GOAL:
        return f"Goal “{subject}”: {_num(v)} conversions in the last {w} min (alert below {_num(t)})."
    if rule.kind == REALTIME_LAG:
        return f"The realtime counters are {_num(v)} s behind the event log (alert at {_num(t)} s)."
    if rule.kind == ARCHIVER_LAG:
        return f"The archiver is {_num(v)} events behind the event log (alert at {_num(t)})."
    if rule.kind == ROLLUP:
        if reading.forced:
            return f"The nightly rollup of {subject} failed."
        return (
            f"The nightly rollup of {subject} is not complete {_num(v)} h after the day ended (alert at {_num(t)} h)."
        )
    if rule.kind == DRIFT:
        return f"Realtime and batch counts of {subject} differ by {v:.1f} % (alert at {_num(t)} %)."
    raise ValueError(f"unknown rule kind {rule.kind!r}")


def details(rule: RuleSpec, reading: Reading, dashboard_path: str) -> dict[str, Any]:
    """The episode's details (the shared JSON contract of ``Episode.details``)."""
    bound = limit(rule, reading)
    extra = reading.extra
    out: dict[str, Any] = {
        "summary": summary(rule, reading),
        "metric": METRICS[rule.kind],
        "value": float(reading.value or 0.0),
        "threshold": float(bound if bound is not None else rule.threshold),
        "window_minutes": rule.window_minutes if rule.kind in (SPIKE, DROP, GOAL) else None,
        "subject": reading.subject,
        "top_referrers": list(extra.get("top_referrers", [])),
        "top_pages": list(extra.get("top_pages", [])),
        "series": list(extra.get("series", [])),
        "dashboard_path": dashboard_path,
    }
    if rule.kind == SPIKE:  # the z-score's terms, so a message can say "120 page views, usually 30"
        out["recent"] = extra.get("recent", 0)
        out["usual"] = extra.get("mean", 0.0)
    if rule.kind == DROP:
        out["usual"] = reading.usual
    return out


def series_points(points: list[tuple[dt.datetime, float]]) -> list[dict[str, Any]]:
    """``[(aware datetime, value)]`` as the details' ``series`` (ISO 8601, UTC)."""
    return [{"t": t.astimezone(dt.UTC).isoformat().replace("+00:00", "Z"), "v": v} for t, v in points]
