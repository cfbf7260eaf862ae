"""Flood guard and salt day arithmetic (pure)."""

from __future__ import annotations

import datetime as dt

from collector.ratelimit import RateLimiter
from footfall_capture.salt_days import salt_day, salt_days_around
from footfall_capture.salts import expires_at


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_burst_then_rate() -> None:
    clock = Clock()
    limiter = RateLimiter(rate=2, burst=3, clock=clock)
    assert [limiter.allow("a") for _ in range(3)] == [0, 0, 0]
    assert limiter.allow("a") == 0.5  # next token in half a second at 2/s
    assert limiter.allow("b") == 0  # other clients are unaffected
    clock.now = 0.5
    assert limiter.allow("a") == 0


def test_memory_is_bounded() -> None:
    limiter = RateLimiter(rate=1, burst=1, max_keys=100)
    for i in range(1000):
        limiter.allow(str(i))
    assert len(limiter._buckets) == 100


def test_salt_day_follows_policy() -> None:
    ts = int(dt.datetime(2026, 11, 21, 23, 30, tzinfo=dt.UTC).timestamp() * 1000)
    assert salt_day(ts, "daily", "Europe/Berlin") == dt.date(2026, 11, 21)
    assert salt_day(ts, "daily_site_tz", "Europe/Berlin") == dt.date(2026, 11, 22)
    assert salt_day(ts, "daily_site_tz", "America/New_York") == dt.date(2026, 11, 21)


def test_utc_salt_day_is_the_datetime_calendar_day() -> None:
    """The integer arithmetic of the daily policy gives the day datetime does, at and around
    every midnight of a leap year and on through a century."""
    day_ms = 86_400_000
    start = int(dt.datetime(2024, 1, 1, tzinfo=dt.UTC).timestamp()) * 1000
    moments = [start + d * day_ms + offset for d in range(367) for offset in (-1, 0, 1, day_ms // 2)]
    moments += [946_684_800_000 + k * 997_013_000 for k in range(3_200)]  # 2000 to 2100, odd steps
    for ts in moments:
        assert salt_day(ts, "daily", "UTC") == dt.datetime.fromtimestamp(ts / 1000, dt.UTC).date(), ts


def test_salt_lives_the_late_window_after_its_day_everywhere() -> None:
    now = dt.datetime(2026, 11, 21, 9, tzinfo=dt.UTC)
    week = dt.timedelta(days=7)
    end = expires_at(dt.date(2026, 11, 21), now, week)
    assert end == dt.datetime(2026, 11, 29, 12, 10, tzinfo=dt.UTC)  # end of the day in UTC-12, a week, grace
    assert expires_at(dt.date(2026, 11, 21), now, dt.timedelta(hours=1)) == dt.datetime(
        2026, 11, 22, 13, 10, tzinfo=dt.UTC
    )


def test_a_past_days_salt_lives_the_late_window_after_its_last_use() -> None:
    """An import of an old day keeps one salt for the whole window, not an hour."""
    now = dt.datetime(2026, 11, 21, 9, tzinfo=dt.UTC)
    week = dt.timedelta(days=7)
    assert expires_at(dt.date(2026, 1, 1), now, week) == now + week + dt.timedelta(minutes=10)


def test_the_salt_days_around_now_cover_every_time_zone_and_the_day_after() -> None:
    """From UTC-12 to UTC+14, and the next day of each (a store fetches it along)."""
    noon = dt.datetime(2026, 11, 28, 12, 0, tzinfo=dt.UTC)
    assert salt_days_around(noon) == [dt.date(2026, 11, 28), dt.date(2026, 11, 29), dt.date(2026, 11, 30)]
    early = dt.datetime(2026, 11, 28, 3, 0, tzinfo=dt.UTC)  # still the 27th at UTC-12
    assert salt_days_around(early) == [dt.date(2026, 11, d) for d in (27, 28, 29)]
    late = dt.datetime(2026, 11, 28, 23, 0, tzinfo=dt.UTC)  # the 29th at UTC+14 and already at UTC+1
    assert salt_days_around(late) == [dt.date(2026, 11, d) for d in (28, 29, 30)]
    for hour in range(24):
        now = dt.datetime(2026, 11, 28, hour, 30, tzinfo=dt.UTC)
        for offset in range(-12, 15):
            local = (now + dt.timedelta(hours=offset)).date()
            assert {local, local + dt.timedelta(days=1)} <= set(salt_days_around(now))
