"""Report periods: parsing, the period due on a day, local bounds, the period before."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest

from alerts.periods import MONTHLY, WEEKLY, last_complete, parse_period

D = dt.date


@pytest.mark.parametrize(
    ("key", "first", "end"),
    [
        ("2026-W47", D(2026, 11, 16), D(2026, 11, 23)),
        ("2026-W01", D(2025, 12, 29), D(2026, 1, 5)),  # ISO week 1 starts in the year before
        ("2026-W53", D(2026, 12, 28), D(2027, 1, 4)),  # 2026 has 53 ISO weeks
        ("2026-11", D(2026, 11, 1), D(2026, 12, 1)),
        ("2026-12", D(2026, 12, 1), D(2027, 1, 1)),
        ("2028-02", D(2028, 2, 1), D(2028, 3, 1)),
    ],
)
def test_a_key_names_its_days_and_round_trips(key: str, first: dt.date, end: dt.date) -> None:
    period = parse_period(key)
    assert (period.first, period.end, period.key) == (first, end, key)
    assert period.days()[0] == first.isoformat()
    assert len(period.days()) == (end - first).days


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("2025-W53", "no ISO week 53"),
        ("2026-W00", "no ISO week 0"),
        ("2026-13", "not a month"),
        ("1999-12", "not a month"),
        ("2026-11-01", "ISO week such as 2026-W47 or a month"),
        ("last week", "ISO week such as 2026-W47 or a month"),
    ],
)
def test_a_bad_period_says_the_form(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_period(text)


def test_the_week_due_is_the_one_ended_by_monday_all_week_long() -> None:
    for day in range(23, 30):  # Monday 23 to Sunday 29 November 2026
        assert last_complete(WEEKLY, D(2026, 11, day)).key == "2026-W47"
    assert last_complete(WEEKLY, D(2026, 11, 30)).key == "2026-W48"


def test_the_month_due_is_the_one_ended_by_the_first() -> None:
    assert last_complete(MONTHLY, D(2026, 12, 1)).key == "2026-11"
    assert last_complete(MONTHLY, D(2026, 12, 31)).key == "2026-11"
    assert last_complete(MONTHLY, D(2027, 1, 1)).key == "2026-12"
    with pytest.raises(ValueError, match="frequency"):
        last_complete("daily", D(2026, 12, 1))


def test_the_previous_period_is_the_calendar_one() -> None:
    assert parse_period("2026-W01").previous().key == "2025-W52"
    assert parse_period("2026-03").previous().key == "2026-02"
    assert parse_period("2026-01").previous().key == "2025-12"


def test_bounds_are_local_midnights_also_across_a_clock_change() -> None:
    berlin = ZoneInfo("Europe/Berlin")
    start, end = parse_period("2026-W43").bounds(berlin)  # clocks go back on Sunday 25 October 2026
    assert (start.isoformat(), end.isoformat()) == ("2026-10-19T00:00:00+02:00", "2026-10-26T00:00:00+01:00")
    assert end.astimezone(dt.UTC) - start.astimezone(dt.UTC) == dt.timedelta(days=7, hours=1)


def test_labels_name_the_days() -> None:
    assert parse_period("2026-W47").label == "week 47, 16-22 November 2026"
    assert parse_period("2026-W40").label == "week 40, 28 September - 4 October 2026"
    assert parse_period("2026-W01").label == "week 1, 29 December 2025 - 4 January 2026"
    assert parse_period("2026-11").label == "November 2026"
