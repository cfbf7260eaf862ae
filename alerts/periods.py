"""Report periods: a site's local calendar week (ISO, Monday to Sunday) or month.

Pure: no Django, no stores. A period is named by its key, ``2026-W47`` (ISO week) or
``2026-11`` (month); its instants are local midnights in the site's zone, built exactly as the
API builds them from ``from=YYYY-MM-DD`` (so a report and an API call over the same days read
the same range).
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from dataclasses import dataclass
from zoneinfo import ZoneInfo

WEEKLY, MONTHLY = "weekly", "monthly"  # the values of ReportSubscription.frequency
_WEEK = re.compile(r"^(\d{4})-W(\d{2})$")
_MONTH = re.compile(r"^(\d{4})-(\d{2})$")


@dataclass(frozen=True, slots=True)
class Period:
    """The days ``first`` (inclusive) to ``end`` (exclusive) of one week or month."""

    frequency: str
    first: dt.date
    end: dt.date

    @property
    def key(self) -> str:
        """``2026-W47`` or ``2026-11``: what ``ReportSubscription.last_period`` and ``Delivery.period`` hold."""
        if self.frequency == WEEKLY:
            year, week, _ = self.first.isocalendar()
            return f"{year}-W{week:02d}"
        return f"{self.first.year}-{self.first.month:02d}"

    @property
    def label(self) -> str:
        """For people: ``week 47, 16-22 November 2026`` or ``November 2026``."""
        if self.frequency == MONTHLY:
            return f"{calendar.month_name[self.first.month]} {self.first.year}"
        last = self.end - dt.timedelta(days=1)
        week = self.first.isocalendar()[1]
        if self.first.month == last.month:
            span = f"{self.first.day}-{_day(last)}"
        elif self.first.year == last.year:
            span = f"{self.first.day} {calendar.month_name[self.first.month]} - {_day(last)}"
        else:
            span = f"{_day(self.first)} - {_day(last)}"
        return f"week {week}, {span}"

    def days(self) -> list[str]:
        """Its local days, ``YYYY-MM-DD``, in order (the keys of the batch layer's days)."""
        count = (self.end - self.first).days
        return [(self.first + dt.timedelta(days=i)).isoformat() for i in range(count)]

    def bounds(self, tz: ZoneInfo) -> tuple[dt.datetime, dt.datetime]:
        """Its start and end: local midnights in ``tz`` (as the API's ``from``/``to`` dates)."""
        return dt.datetime.combine(self.first, dt.time(), tz), dt.datetime.combine(self.end, dt.time(), tz)

    def previous(self) -> Period:
        """The calendar period before it (the week before; the month before, whatever its length)."""
        if self.frequency == WEEKLY:
            return week_of(self.first - dt.timedelta(days=7))
        return month_of(self.first - dt.timedelta(days=1))


def _day(day: dt.date) -> str:
    return f"{day.day} {calendar.month_name[day.month]} {day.year}"


def week_of(day: dt.date) -> Period:
    """The ISO week (Monday to Sunday) holding ``day``."""
    monday = day - dt.timedelta(days=day.weekday())
    return Period(WEEKLY, monday, monday + dt.timedelta(days=7))


def month_of(day: dt.date) -> Period:
    """The calendar month holding ``day``."""
    first = day.replace(day=1)
    end = (first + dt.timedelta(days=32)).replace(day=1)
    return Period(MONTHLY, first, end)


def parse_period(text: str) -> Period:
    """``2026-W47`` (an ISO week) or ``2026-11`` (a month); ValueError saying the form otherwise."""
    raw = text.strip()
    if match := _WEEK.match(raw):
        year, week = int(match[1]), int(match[2])
        try:
            return week_of(dt.date.fromisocalendar(year, week, 1))
        except ValueError:
            raise ValueError(f"{raw!r}: {year} has no ISO week {week}") from None
    if match := _MONTH.match(raw):
        year, month = int(match[1]), int(match[2])
        if not 1 <= month <= 12 or year < 2000:
            raise ValueError(f"{raw!r}: not a month (YYYY-MM, from 2000 on)")
        return month_of(dt.date(year, month, 1))
    raise ValueError(f"{raw!r}: a period is an ISO week such as 2026-W47 or a month such as 2026-11")


def last_complete(frequency: str, today: dt.date) -> Period:
    """The latest period of ``frequency`` that ended by the start of local day ``today``: on a
    Monday the week just ended, on the 1st the month just ended, and the same period all week
    (or month) after."""
    if frequency == WEEKLY:
        return week_of(today - dt.timedelta(days=7))
    if frequency == MONTHLY:
        return month_of(today.replace(day=1) - dt.timedelta(days=1))
    raise ValueError(f"frequency must be {WEEKLY} or {MONTHLY}, not {frequency!r}")
