"""SaltStore over real Redis: salts held ahead, shared, kept for the late-event window."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator

import pytest
import redis

from footfall.config import Config
from footfall_capture.salt_days import SaltUnavailable
from footfall_capture.salts import KEY, SaltStore

WEEK = dt.timedelta(days=7)


class Clock:
    def __init__(self, now: dt.datetime) -> None:
        self.now = now

    def __call__(self) -> dt.datetime:
        return self.now


@pytest.fixture
def days(redis_client: redis.Redis) -> Iterator[tuple[dt.date, dt.date]]:
    """A far-future day and the next, whose salts no other test touches; deleted afterwards."""
    first = dt.date(2090, 1, 1) + dt.timedelta(days=uuid.uuid4().int % 3000)
    pair = (first, first + dt.timedelta(days=1))
    yield pair
    redis_client.delete(*(KEY.format(day=d.isoformat()) for d in pair))


def test_the_next_days_salt_is_held_ahead_through_an_outage(cfg: Config, days: tuple[dt.date, dt.date]) -> None:
    """Asked for a day's salt before midnight, the store holds the next day's too: after
    midnight it answers from memory with Redis unreachable, the same salt Redis keeps."""
    today, tomorrow = days
    clock = Clock(dt.datetime.combine(today, dt.time(23, 50), dt.UTC))
    store = SaltStore(redis.Redis.from_url(cfg.redis_url), WEEK, clock=clock)
    store.salt(today)
    store.client = redis.Redis.from_url("redis://127.0.0.1:1/0", socket_timeout=1)  # Redis gone
    clock.now += dt.timedelta(minutes=40)
    held = store.salt(tomorrow)
    shared = SaltStore(redis.Redis.from_url(cfg.redis_url), WEEK, clock=clock).salt(tomorrow)
    assert held == shared
    with pytest.raises(SaltUnavailable):
        store.salt(tomorrow + dt.timedelta(days=1))  # neither held nor reachable: said, not guessed


def test_a_salt_lives_the_late_window_and_the_longest_window_wins(
    cfg: Config, redis_client: redis.Redis, days: tuple[dt.date, dt.date]
) -> None:
    today, _ = days
    now = dt.datetime.combine(today, dt.time(12), dt.UTC)
    end_everywhere = dt.datetime.combine(today + dt.timedelta(days=1), dt.time(12), dt.UTC)
    short = SaltStore(redis.Redis.from_url(cfg.redis_url), dt.timedelta(hours=1), clock=lambda: now)
    long = SaltStore(redis.Redis.from_url(cfg.redis_url), WEEK, clock=lambda: now)
    key = KEY.format(day=today.isoformat())
    salt = short.salt(today)
    assert redis_client.expiretime(key) == int((end_everywhere + dt.timedelta(hours=1, minutes=10)).timestamp())
    assert long.salt(today) == salt
    assert redis_client.expiretime(key) == int((end_everywhere + WEEK + dt.timedelta(minutes=10)).timestamp())
    fresh_short = SaltStore(redis.Redis.from_url(cfg.redis_url), dt.timedelta(hours=1), clock=lambda: now)
    assert fresh_short.salt(today) == salt  # a process with a shorter window never shortens it again
    assert redis_client.expiretime(key) == int((end_everywhere + WEEK + dt.timedelta(minutes=10)).timestamp())
