"""footfall.goals.prop_text: a property value's text, the one form every layer compares goals by."""

from __future__ import annotations

import pytest

from footfall.goals import GoalSpec, prop_text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, ""), (True, "true"), (False, "false"), ("pro", "pro"), (3, "3"), (3.0, "3"), (-0.0, "0"),
        (19.99, "19.99"), (100000.0, "100000"), (0.00001, "0.00001"), (1e-6, "1.0E-6"), (1.5e-7, "1.5E-7"),
        (1e15, "1000000000000000"), (1e16, "1.0E16"), (-2e23, "-2.0E23"), (5e-324, "4.9E-324"),
        (10**37, str(10**37)), (10**40, "1.0E40"), (float("nan"), ""), (float("-inf"), ""),
    ],
)  # fmt: skip
def test_prop_text(value: object, text: str) -> None:
    """Numbers read as exact decimals where the archive writes them plainly, else as Java doubles."""
    assert prop_text(value) == text


def test_event_goal_matches_by_property_text() -> None:
    """``n = 3`` is reached by 3 and 3.0 alike, not by "3.5"; a missing property reaches nothing."""
    goal = GoalSpec("g", "event", event="buy", prop="n", value="3")
    assert goal.matches("buy", None, {"n": 3.0})
    assert goal.matches("buy", None, {"n": 3})
    assert not goal.matches("buy", None, {"n": 3.5})
    assert not goal.matches("buy", None, {})
