"""The realtime bench's pure helpers: progress of a worker round, its steady part, Redis's own counts."""

from __future__ import annotations

import pytest

from bench.realtime_bench import (
    Progress,
    batches_at_least,
    command_calls,
    done_events,
    merge_steps,
    redis_cpu,
    steady,
)


def test_done_events_sums_the_next_offsets_of_the_topic_only() -> None:
    offsets = {b"rtbench-1:0": b"40", b"rtbench-1:5": b"2", b"rtbench-1-lat:0": b"7", b"other:1": b"9"}
    assert done_events(offsets, "rtbench-1") == 42


def test_redis_cpu_prefers_the_main_thread() -> None:
    info = {
        "used_cpu_user": 9.0,
        "used_cpu_sys": 9.0,
        "used_cpu_user_main_thread": 1.5,
        "used_cpu_sys_main_thread": 0.5,
    }
    assert redis_cpu(info) == 2.0
    assert redis_cpu({"used_cpu_user": 1.25, "used_cpu_sys": 0.75}) == 2.0


def test_command_calls_counts_successful_calls_between_two_looks() -> None:
    before = {"cmdstat_evalsha": {"calls": 10, "failed_calls": 1}, "cmdstat_info": {"calls": 3}}
    after = {
        "cmdstat_evalsha": {"calls": 16, "failed_calls": 2},  # one NOSCRIPT answer in between
        "cmdstat_info": {"calls": 3},
        "cmdstat_hset": {"calls": 4, "rejected_calls": 1},
    }
    assert command_calls(before, after) == {"evalsha": 5, "hset": 3}


def test_steady_leaves_out_the_start_and_takes_redis_cpu_per_event() -> None:
    looks = [
        Progress(t=0.0, done=0, redis_cpu=1.0, worker_cpu=0.0),  # joining the group
        Progress(t=1.0, done=1000, redis_cpu=1.5, worker_cpu=2.0),
        Progress(t=1.5, done=3000, redis_cpu=1.52, worker_cpu=2.05),
        Progress(t=2.0, done=5000, redis_cpu=1.54, worker_cpu=2.1),
        Progress(t=2.1, done=5000, redis_cpu=1.6, worker_cpu=2.2),  # after the end: not counted
    ]
    part = steady(looks, total=5000)
    assert part is not None
    assert part["events"] == 4000
    assert part["seconds"] == 1.0
    assert part["eps"] == 4000
    assert part["redis_us_per_event"] == pytest.approx(10.0)
    assert part["floor_eps"] == 100_000
    assert part["floor_ratio"] == pytest.approx(0.04)
    assert part["worker_cpu_us_per_event"] == pytest.approx(25.0)


def test_steady_is_none_when_one_step_did_everything() -> None:
    looks = [Progress(0.0, 0, 0.0, 0.0), Progress(0.5, 5000, 0.1, 0.1), Progress(0.6, 5000, 0.1, 0.1)]
    assert steady(looks, total=5000) is None


def test_batches_at_least_the_offset_updates_seen_and_the_size_cap() -> None:
    looks = [Progress(t, done, 0.0, 0.0) for t, done in enumerate([0, 0, 1000, 1000, 2500, 4000, 5000])]
    assert batches_at_least(looks, total=5000, batch_size=5000) == 4  # the offsets grew four times
    assert batches_at_least(looks, total=5000, batch_size=1000) == 5  # no batch holds more than 1000
    assert batches_at_least(looks, total=5000, batch_size=None) == 4


def test_merge_steps_are_the_script_calls_whose_first_argument_is_an_hour_marker() -> None:
    def entry(*args: bytes) -> list[object]:
        return [1, 1700000000, 5, list(args), b"127.0.0.1:1", b""]

    entries = [
        entry(b"EVALSHA", b"ab12", b"0", b"ff:rt:s:h493000:merged", b"1764000000", b"ff:rt:s:h493000:c"),
        entry(b"evalsha", b"cd34", b"0", b"ff:rt:s:h493001:merged"),
        # A batch: its first argument is the group's offsets; hour markers come later among its arguments.
        entry(b"EVALSHA", b"ef56", b"0", b"ff:rt:offsets:g", b"1", b"ff:rt:s:h493000:merged"),
        # The marker as a key, not the first argument.
        entry(b"EVAL", b"return 1", b"1", b"ff:rt:s:h493002:merged", b"x"),
        entry(b"HGETALL", b"ff:rt:offsets:g"),
        entry(b"EVALSHA", b"ab12"),
    ]
    assert merge_steps(entries) == 2
