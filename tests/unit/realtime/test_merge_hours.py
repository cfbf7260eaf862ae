"""Which hours are due for merging their value sketches (pure parts of realtime.merge)."""

from __future__ import annotations

from footfall.vocabulary import EVENT_COUNT_DIMENSIONS, EVENT_DIMENSIONS
from realtime.keys import HOUR_MS, MERGE_DELAY_MS
from realtime.merge import VALUE_DIMENSIONS, closed_hours


def test_closed_hours_end_a_delay_before_now() -> None:
    start = 100 * HOUR_MS + 17 * 60_000  # 100:17
    assert closed_hours(start, 103 * HOUR_MS + MERGE_DELAY_MS) == range(100, 103)
    assert closed_hours(start, 103 * HOUR_MS + MERGE_DELAY_MS - 1) == range(100, 102)
    assert closed_hours(start, 103 * HOUR_MS, delay_ms=0) == range(100, 103)


def test_no_hour_is_closed_before_the_first_ends() -> None:
    start = 100 * HOUR_MS
    assert not closed_hours(start, start + 30 * 60_000)
    assert not closed_hours(start, start - HOUR_MS)  # now before the start: nothing, not a negative range


def test_every_dimension_with_value_sketches_is_merged() -> None:
    assert set(VALUE_DIMENSIONS) == {*EVENT_DIMENSIONS, *EVENT_COUNT_DIMENSIONS}
