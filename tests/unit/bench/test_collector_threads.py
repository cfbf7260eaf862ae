"""bench.collector_threads reads each thread's own CPU time, not the process's."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from bench.collector_threads import thread_cpu, thread_seconds


def _spin(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_thread_cpu_charges_busy_work_to_the_thread_that_did_it() -> None:
    me = threading.get_native_id()
    idle_done = threading.Event()
    idle = threading.Thread(target=idle_done.wait, name="idle")
    idle.start()
    try:
        before = thread_cpu()
        _spin(0.05)
        after = thread_cpu()
    finally:
        idle_done.set()
        idle.join()
    assert 0.03 <= after[me] - before[me] < 5.0  # ticks (10 ms) or schedstat (ns): either sees 50 ms
    assert after[idle.native_id] - before[idle.native_id] < 0.02  # type: ignore[index]


def test_thread_seconds_reads_schedstat_to_the_nanosecond(tmp_path: Path) -> None:
    (tmp_path / "schedstat").write_text("3141592653 27182818 42\n")
    (tmp_path / "stat").write_text(_stat(utime=100, stime=50))  # 1.5 s of ticks: not what is read
    assert thread_seconds(tmp_path) == pytest.approx(3.141592653, abs=1e-12)


def test_thread_seconds_falls_back_to_stat_ticks_without_schedstat(tmp_path: Path) -> None:
    (tmp_path / "stat").write_text(_stat(utime=250, stime=50))
    assert thread_seconds(tmp_path) == pytest.approx(300 / os.sysconf("SC_CLK_TCK"))


def test_thread_seconds_is_none_for_a_thread_that_ended(tmp_path: Path) -> None:
    assert thread_seconds(tmp_path / "4242") is None


def test_thread_cpu_resolves_less_than_a_tick_on_this_kernel() -> None:
    """Where tests run (Linux with schedstat, as on every machine the project targets): a
    3 ms spin reads as 3 ms, where stat's 10 ms tick samples would read 0 or 10 ms."""
    me = threading.get_native_id()
    before = thread_cpu()[me]
    _spin(0.003)
    spent = thread_cpu()[me] - before
    assert 0.0025 <= spent < 0.009


def _stat(utime: int, stime: int) -> str:
    """A ``/proc/<pid>/task/<tid>/stat`` line; the name holds a space and a parenthesis, as
    thread names may (the fields are counted after the last one)."""
    after_name = ["S", "1", "1", "1", "0", "-1", "4194560", "10", "0", "0", "0", str(utime), str(stime), "0", "0"]
    return "4242 (rdk:broker 1) x) " + " ".join(after_name) + "\n"
