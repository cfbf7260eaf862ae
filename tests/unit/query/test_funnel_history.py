"""A funnel over several days from its daily rollup documents: sums, exact and estimated medians."""

from __future__ import annotations

import bisect
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from footfall.goals import FUNNEL_TIME_BOUNDS_MS as BOUNDS
from historical.reads import FunnelStepFigures, histogram_median, merge_funnel

WIDTH = len(BOUNDS) + 1


def histogram(*times: int) -> list[int]:
    counts = [0] * WIDTH
    for took in times:
        counts[bisect.bisect_right(BOUNDS, took)] += 1
    return counts


def step(*times: int, visitors: int | None = None) -> dict:
    """A stored step whose visitors took ``times`` from the step before (none: a first step)."""
    median = float(statistics.median(times)) if times else None
    return {
        "visitors": len(times) if visitors is None else visitors,
        "median_ms": median,
        "times_ms": histogram(*times),
    }


def doc(day: str, *steps: dict, name: str = "Signup") -> dict:
    return {"day": day, "funnel_id": "7", "name": name, "steps": list(steps)}


def test_median_of_an_empty_histogram_is_none():
    """No times, no median."""
    assert histogram_median([0] * WIDTH) is None


def test_median_interpolates_within_its_bucket():
    """One time in [bounds[15], bounds[16]): the middle of that bucket; under 1 s: from 0."""
    assert histogram_median(histogram(180_000)) == pytest.approx((BOUNDS[15] + BOUNDS[16]) / 2)
    assert histogram_median(histogram(100, 200, 900, 2 * BOUNDS[0])) == pytest.approx(BOUNDS[0] * 2 / 3)


def test_median_in_the_open_last_bucket_is_its_lower_bound():
    """Times of 7 days or more have no upper bound to interpolate to."""
    assert histogram_median(histogram(8 * 86_400_000)) == float(BOUNDS[-1])


def test_a_histogram_of_another_length_is_refused():
    """Counts not matching the bounds cannot be read."""
    with pytest.raises(ValueError, match="42 counts"):
        histogram_median([1, 2, 3])


@given(
    st.lists(st.integers(min_value=0, max_value=10 * 86_400_000), min_size=1, max_size=200).filter(lambda t: len(t) % 2)
)
def test_estimated_median_lies_in_the_true_medians_bucket(times):
    """For an odd count the true median is one of the times; the estimate is within its bucket."""
    true = statistics.median(times)
    bucket = bisect.bisect_right(BOUNDS, true)
    low = 0 if bucket == 0 else BOUNDS[bucket - 1]
    high = BOUNDS[bucket] if bucket < len(BOUNDS) else BOUNDS[-1]
    assert low <= histogram_median(histogram(*times)) <= high


def test_days_sum_with_an_estimated_median():
    """Two days with visitors at a step: visitors and histograms add up, the median is estimated."""
    merged = merge_funnel(
        [doc("2026-11-02", step(visitors=3), step(60_000, 61_000)), doc("2026-11-01", step(visitors=2), step(62_000))]
    )
    assert merged.days == ("2026-11-01", "2026-11-02")
    assert merged.steps[0] == FunnelStepFigures(5, None, False, tuple([0] * WIDTH))
    second = merged.steps[1]
    assert (second.visitors, second.median_estimated, second.times_ms) == (
        3,
        True,
        tuple(histogram(60_000, 61_000, 62_000)),
    )
    assert second.median_ms == histogram_median(histogram(60_000, 61_000, 62_000))


def test_one_day_with_visitors_keeps_its_exact_median():
    """Only one day reached the step: its exact median stands for the range."""
    merged = merge_funnel(
        [doc("2026-11-01", step(visitors=1), step()), doc("2026-11-02", step(visitors=2), step(1_000, 4_000))]
    )
    assert merged.steps[1] == FunnelStepFigures(2, 2_500.0, False, tuple(histogram(1_000, 4_000)))


def test_the_latest_definition_gives_the_steps_and_name():
    """A step added since an older day counts only the days that had it; the name is the latest."""
    older = doc("2026-11-01", step(visitors=4), step(5_000), name="Old")
    newer = doc("2026-11-02", step(visitors=1), step(7_000), step(9_000), name="New")
    merged = merge_funnel([newer, older])
    assert merged.name == "New"
    assert [s.visitors for s in merged.steps] == [5, 2, 1]
    assert merged.steps[2].median_ms == 9_000.0


def test_merging_nothing_is_an_error():
    """The caller answers "not rolled up" itself; merging no documents is a bug."""
    with pytest.raises(ValueError, match="no funnel documents"):
        merge_funnel([])
