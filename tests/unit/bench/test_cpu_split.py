"""The collector bench's CPU split (``--cpus auto``) and running a server on its CPUs."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from bench.collector_bench import cpu_split
from bench.harness import Server


def test_auto_keeps_the_highest_available_cpu_for_the_rest() -> None:
    assert cpu_split(frozenset({2, 5, 7})) == (frozenset({2, 5}), frozenset({7}))


def test_no_split_with_one_cpu() -> None:
    assert cpu_split(frozenset({0})) is None


def test_a_pinned_server_and_the_processes_it_forks_run_on_its_cpus_only(tmp_path: Path) -> None:
    available = os.sched_getaffinity(0)
    cpu = min(available)  # one CPU of the two or more every machine of this project has
    server = Server("pinned", os.environ, tmp_path / "log", cpus=frozenset({cpu}))
    # In place of gunicorn: a parent that forks a worker, as gunicorn's master does.
    server.argv = [sys.executable, "-c", "import os, time\nif os.fork() == 0: time.sleep(60)\ntime.sleep(60)"]
    server.start(probe=lambda: True)
    try:
        assert server.proc is not None
        children = Path(f"/proc/{server.proc.pid}/task/{server.proc.pid}/children")
        deadline = time.monotonic() + 10
        while not children.read_text().split() and time.monotonic() < deadline:
            time.sleep(0.02)  # the interpreter starts, then forks
        pids = [server.proc.pid, *map(int, children.read_text().split())]
        assert len(pids) == 2
        assert [os.sched_getaffinity(pid) for pid in pids] == [{cpu}, {cpu}]
        assert os.sched_getaffinity(0) == available  # the caller itself is not moved
    finally:
        server.stop()
