"""GroupWatch: when a consumer's group membership counts as stuck (librdkafka statistics)."""

from __future__ import annotations

import json

import pytest

from footfall.kafka_client import MAX_POLL_INTERVAL_MS, REJOIN_LIMIT_S, GroupWatch


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def report(state: str | None, join_state: str = "steady") -> str:
    """A librdkafka statistics report, trimmed to what the watch reads (None: no group)."""
    stats: dict[str, object] = {"name": "rdkafka#consumer-1", "brokers": {}}
    if state is not None:
        stats["cgrp"] = {"state": state, "join_state": join_state, "assignment_size": 3}
    return json.dumps(stats)


def feed(watch: GroupWatch, clock: Clock, reports: list[str], every_s: float = 1.0) -> None:
    for text in reports:
        watch.observe(text)
        clock.now += every_s


def test_the_default_limit_outlasts_a_legitimate_rejoin() -> None:
    assert REJOIN_LIMIT_S > MAX_POLL_INTERVAL_MS / 1000


def test_a_steady_member_is_never_stuck() -> None:
    clock, fired = Clock(), []
    watch = GroupWatch(limit_s=5, clock=clock)
    watch.on_stuck = lambda: fired.append(clock.now)
    feed(watch, clock, [report("up", "steady")] * 60)
    assert not watch.stuck
    assert fired == []
    assert watch.state == "up/steady"


def test_out_of_the_group_for_the_limit_in_a_row_fires_once() -> None:
    clock, fired = Clock(), []
    watch = GroupWatch(limit_s=10, clock=clock)
    watch.on_stuck = lambda: fired.append(clock.now)
    feed(watch, clock, [report("up", "steady")])
    feed(watch, clock, [report("up", "wait-join")] * 9)  # 9 s out of the group so far
    assert fired == []
    feed(watch, clock, [report("wait-coord", "init")] * 20)  # still out, in another state
    assert len(fired) == 1
    assert watch.stuck
    assert watch.state == "wait-coord/init"


def test_a_rejoin_within_the_limit_starts_the_count_again() -> None:
    clock, fired = Clock(), []
    watch = GroupWatch(limit_s=10, clock=clock)
    watch.on_stuck = lambda: fired.append(clock.now)
    for _ in range(5):  # rebalances of 8 s each, always back in the group in time
        feed(watch, clock, [report("up", "wait-sync")] * 8 + [report("up", "steady")])
    assert fired == []
    assert not watch.stuck


def test_the_count_follows_the_clock_not_the_number_of_reports() -> None:
    clock, fired = Clock(), []
    watch = GroupWatch(limit_s=30, clock=clock)
    watch.on_stuck = lambda: fired.append(clock.now)
    feed(watch, clock, [report("query-coord", "init")] * 3, every_s=20.0)  # poll() was slow: 40 s covered
    assert len(fired) == 1


def test_a_consumer_without_a_group_is_never_flagged() -> None:
    clock = Clock()
    watch = GroupWatch(limit_s=1, clock=clock)
    feed(watch, clock, [report(None)] * 10)
    assert not watch.stuck
    assert watch.state == "unknown"


def test_the_limit_must_be_positive() -> None:
    with pytest.raises(ValueError, match="limit_s"):
        GroupWatch(limit_s=0)
