"""gunicorn configuration that profiles request handling in a single sync worker.

Used by ``bench/collector_profile.py`` as ``gunicorn -c python:bench.gunicorn_profile``.
The profiler runs from ``pre_request`` to ``post_request`` of each request (so the time the
worker idles waiting for the next connection is not in the profile), skips the first
``FFBENCH_PROFILE_SKIP`` requests (cold caches, connections, the Kafka producer), and is
written when the worker exits to ``FFBENCH_PROFILE_OUT`` (``.txt`` plus ``.prof`` for
cProfile or ``.html`` for pyinstrument). ``FFBENCH_PROFILER``: ``cprofile`` (default,
deterministic: exact call counts, inflates many small calls) or ``pyinstrument``
(statistical, closer to real proportions; ``pip install pyinstrument`` first).
``FFBENCH_PROFILE_CLOCK=cpu`` makes cProfile time with the thread's CPU clock instead of the
wall clock: on a machine shared with other busy processes, wall time mostly measures their
load (a request preempted for 5 ms shows as 5 ms spent in whatever it was running); CPU
time does not, at the cost of a slower profiler.
"""

from __future__ import annotations

import cProfile
import io
import os
import pstats
import time
from pathlib import Path
from typing import Any

# A sync worker handles one request at a time on its main thread: one profiler sees it all.
worker_class = "sync"
workers = 1

_KIND = os.environ.get("FFBENCH_PROFILER", "cprofile")
_OUT = Path(os.environ.get("FFBENCH_PROFILE_OUT", "collect_profile"))
_SKIP = int(os.environ.get("FFBENCH_PROFILE_SKIP", "200"))
_CLOCK = os.environ.get("FFBENCH_PROFILE_CLOCK", "wall")
_state: dict[str, Any] = {"seen": 0, "profiled": 0, "profiler": None}


def post_fork(server: Any, worker: Any) -> None:
    if _KIND == "pyinstrument":
        from pyinstrument import Profiler

        # 0.2 ms between samples: a beacon takes about a millisecond.
        _state["profiler"] = Profiler(interval=0.0002, async_mode="disabled")
    else:
        _state["profiler"] = cProfile.Profile(time.thread_time) if _CLOCK == "cpu" else cProfile.Profile()


def pre_request(worker: Any, req: Any) -> None:
    _state["seen"] += 1
    if _state["seen"] > _SKIP:
        if _KIND == "pyinstrument":
            _state["profiler"].start()
        else:
            _state["profiler"].enable()


def post_request(worker: Any, req: Any, environ: dict, resp: Any) -> None:
    if _state["seen"] > _SKIP:
        if _KIND == "pyinstrument":
            _state["profiler"].stop()
        else:
            _state["profiler"].disable()
        _state["profiled"] += 1


def worker_exit(server: Any, worker: Any) -> None:
    profiler, count = _state["profiler"], _state["profiled"]
    if profiler is None or not count:
        return
    header = f"{_KIND} profile ({_CLOCK} clock) of {count} requests (after skipping {_SKIP})\n\n"
    if _KIND == "pyinstrument":
        _OUT.with_suffix(".html").write_text(profiler.output_html())
        text = profiler.output_text(unicode=True, color=False, show_all=False)
        _OUT.with_suffix(".txt").write_text(header + text)
        return
    profiler.dump_stats(_OUT.with_suffix(".prof"))
    buf = io.StringIO()
    stats = pstats.Stats(profiler, stream=buf).strip_dirs()
    buf.write(header)
    stats.sort_stats("tottime").print_stats(30)
    stats.sort_stats("cumulative").print_stats(45)
    _OUT.with_suffix(".txt").write_text(buf.getvalue())
