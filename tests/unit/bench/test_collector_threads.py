"""bench.collector_threads reads each thread's own CPU time, not the process's."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from bench.collector_threads import thread_cpu


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


@pytest.mark.skipif(not Path("/proc/self/schedstat").exists(), reason="kernel keeps no schedstat: ticks only")
def test_thread_cpu_resolves_less_than_a_tick() -> None:
    me = threading.get_native_id()
    before = thread_cpu()[me]
    _spin(0.003)  # under a 10 ms tick: stat's tick samples would read 0 or 10 ms
    spent = thread_cpu()[me] - before
    assert 0.0025 <= spent < 0.009
