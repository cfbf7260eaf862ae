"""Date ranges of the history view, in the site's time zone: pure, no I/O.

A range is whole local days ``first..last`` (inclusive), i.e. the half-open instants
``[first 00:00, last+1 00:00)`` in the site's zone — the same range the REST API reads from
``from=<first>&to=<last+1>``. The previous period is the same number of days before it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from query.params import MAX_RANGE, Range
from query.plan import local_midnight

PRESETS = {"today": 1, "7d": 7, "30d": 30, "90d": 90}
PRESET_LABELS = {"today": "Today", "7d": "7 days", "30d": "30 days", "90d": "90 days", "custom": "Custom"}
HOURLY_UP_TO_DAYS = 2  # ranges of up to two days are drawn per hour, longer ones per day


class RangeError(ValueError):
    """The chosen dates do not make a range; the message says what to change."""


@dataclass(frozen=True, slots=True)
class DayRange:
    first: dt.date
    last: dt.date  # inclusive

    @property
    def days(self) -> int:
        return (self.last - self.first).days + 1

    @property
    def interval(self) -> str:
        return "hour" if self.days <= HOURLY_UP_TO_DAYS else "day"

    def previous(self) -> DayRange:
        return DayRange(self.first - dt.timedelta(days=self.days), self.first - dt.timedelta(days=1))

    def query_range(self, tz: ZoneInfo) -> Range:
        return Range(local_midnight(self.first, tz), local_midnight(self.last + dt.timedelta(days=1), tz), tz)

    def api_params(self) -> dict[str, str]:
        """The REST API's ``from``/``to`` for the same range."""
        return {"from": self.first.isoformat(), "to": (self.last + dt.timedelta(days=1)).isoformat()}

    def label(self) -> str:
        if self.first == self.last:
            return self.first.strftime("%a %d %b %Y")
        return f"{self.first.strftime('%d %b %Y')} to {self.last.strftime('%d %b %Y')} ({self.days} days)"


def today_in(tz: ZoneInfo, now: dt.datetime) -> dt.date:
    return now.astimezone(tz).date()


def resolve(preset: str | None, start: str | None, end: str | None, today: dt.date) -> DayRange:
    """The days of a preset (ending today, site time), or of the picker's dates for ``custom``."""
    if preset in PRESETS:
        return DayRange(today - dt.timedelta(days=PRESETS[preset] - 1), today)
    if not start or not end:
        raise RangeError("Pick a first and a last day in the date picker.")
    try:
        first, last = dt.date.fromisoformat(start[:10]), dt.date.fromisoformat(end[:10])
    except ValueError:
        raise RangeError("The dates must look like 2026-11-01.") from None
    if last < first:
        raise RangeError("The last day is before the first day: swap them.")
    if (last - first).days + 1 > MAX_RANGE.days:
        raise RangeError(f"Pick at most {MAX_RANGE.days} days.")
    if first.year < 2000:
        raise RangeError("Pick days from the year 2000 on.")
    return DayRange(first, last)
