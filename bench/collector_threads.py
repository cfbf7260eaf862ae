"""Where a tracked page view's CPU goes, by thread: ClickstreamMiddleware in-process.

Run from the repository root with a stack's environment set (Redis and Kafka: the
middleware salts visitor ids from Redis and produces to Kafka)::

    ~/.cache/footfall/venv/bin/python -m deploy.local.stack start redis kafka
    eval "$(~/.cache/footfall/venv/bin/python -m deploy.local.stack env)"
    ~/.cache/footfall/venv/bin/python -m bench.collector_threads [--requests 3000] [--rounds 5]

Two Django WSGI handlers in one process, built from the collector benchmark's settings
(``bench/settings_bench.py``): A without the middleware, B with it. Each round calls one
handler ``--requests`` times with the page view of ``bench/urls.py`` (browser-like headers,
a few User-Agents, referrers and public client addresses, as ``bench/wrk_collector.lua``
sends), waits half a second for the background threads to finish the round's events, and
reads the CPU time of every thread of the process from ``/proc/self/task`` (see :func:`thread_cpu`). Rounds
alternate A and B (reversed every other round). Prints the median process CPU per request
of each, and per round each thread's CPU per request by name (``footfall-tracker``: the
middleware's background thread; ``footfall-sink``: the sink's Kafka probe and spool replay;
``rdk:*``: librdkafka's threads). No HTTP server and no load generator: the split is
exact, but it is one request thread, not gunicorn's four (no GIL contention between
request threads). Exit status 0; a non-200 answer raises.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

AGENTS = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.6 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
)
REFERRERS = ("https://www.google.com/", "", "https://x.com/")
CLIENTS = ("81.2.69.142", "89.160.20.112", "216.160.83.56", "2a02:cf40::1")
TASKS = Path("/proc/self/task")  # one directory per thread of this process, named by native id
WSGIApp = Callable[[dict[str, Any], Callable[..., object]], Iterable[bytes]]


def handlers() -> tuple[WSGIApp, WSGIApp, str]:
    """(A, B, host): WSGI handlers without and with the middleware, as ``footfall.wsgi`` builds them."""
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings_bench"
    os.environ["FOOTFALL_BENCH_MIDDLEWARE"] = "1"
    os.environ["FOOTFALL_TRUSTED_PROXIES"] = "1"  # X-Forwarded-For carries the client, as in the bench
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{tempfile.mkdtemp(prefix='ff-threads-')}/db.sqlite3")
    import django

    django.setup()
    from django.conf import settings
    from django.core.handlers.wsgi import WSGIHandler

    with_mw = WSGIHandler()  # reads settings.MIDDLEWARE now
    settings.MIDDLEWARE = [m for m in settings.MIDDLEWARE if not m.endswith("ClickstreamMiddleware")]
    without = WSGIHandler()
    hosts = [h for h in settings.ALLOWED_HOSTS if h != "*" and not h.startswith(".")]
    return without, with_mw, hosts[0] if hosts else "localhost"


def environ(i: int, host: str) -> dict[str, Any]:
    return {
        "REQUEST_METHOD": "GET", "PATH_INFO": "/bench/page", "QUERY_STRING": "", "SERVER_NAME": host,
        "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1", "HTTP_HOST": host, "REMOTE_ADDR": "127.0.0.1",
        "HTTP_USER_AGENT": AGENTS[i % len(AGENTS)], "HTTP_REFERER": REFERRERS[i % len(REFERRERS)],
        "HTTP_X_FORWARDED_FOR": CLIENTS[i % len(CLIENTS)], "HTTP_X_FORWARDED_PROTO": "https",
        "wsgi.input": io.BytesIO(b""), "wsgi.url_scheme": "http", "wsgi.errors": sys.stderr,
    }  # fmt: skip


def thread_cpu() -> dict[int, float]:
    """CPU seconds of each thread of this process, by native thread id (threads that ended
    meanwhile are left out)."""
    out = {}
    for tid in map(int, os.listdir(TASKS)):
        seconds = thread_seconds(TASKS / str(tid))
        if seconds is not None:
            out[tid] = seconds
    return out


def thread_seconds(task: Path) -> float | None:
    """The thread's run time from ``schedstat`` (nanoseconds, kept by the scheduler), or from
    ``stat``'s user + system ticks on a kernel without it; ``None`` if the thread is gone.

    Why schedstat first: ticks are samples taken every 10 ms and charged to whichever thread
    is running then, so a tracker that runs a few milliseconds per 100 ms batch reads in
    steps of 3.3 µs per request at 3,000 requests, and a round can miss or double a batch.
    ``task`` is the thread's directory under :data:`TASKS`."""
    try:
        return int((task / "schedstat").read_text().split()[0]) / 1e9
    except (OSError, IndexError, ValueError):
        pass  # no schedstat (CONFIG_SCHED_INFO off), or the thread ended: try stat
    try:
        fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_names() -> dict[int, str]:
    """Python's thread names, else the kernel's (librdkafka names its threads there)."""
    names = {}
    for tid in map(int, os.listdir(TASKS)):
        try:
            names[tid] = (TASKS / str(tid) / "comm").read_text().strip()
        except OSError:
            continue
    names.update({t.native_id: t.name for t in threading.enumerate() if t.native_id is not None})
    names[threading.get_native_id()] = "request"
    return names


def serve(app: WSGIApp, requests: int, host: str) -> None:
    """Send ``requests`` page views to ``app`` as a WSGI server would (the body read, then
    closed: Django's request_finished); raise if one is not answered 200."""

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: object = None) -> None:
        if not status.startswith("200"):
            raise RuntimeError(f"/bench/page answered {status}")

    for i in range(requests):
        body = app(environ(i, host), start_response)
        b"".join(body)
        getattr(body, "close", lambda: None)()


def one_round(app: WSGIApp, requests: int, host: str) -> tuple[float, dict[str, float]]:
    """(process CPU µs per request, {thread name: CPU µs per request})."""
    before, started = thread_cpu(), time.process_time()
    serve(app, requests, host)
    time.sleep(0.5)  # the tracker wakes every 100 ms and librdkafka lingers 200 ms
    process_us = (time.process_time() - started) / requests * 1e6
    per: dict[str, float] = {}
    names = thread_names()
    for tid, cpu in thread_cpu().items():
        name = names.get(tid, str(tid))
        per[name] = per.get(name, 0.0) + (cpu - before.get(tid, 0.0)) / requests * 1e6
    return process_us, {k: round(v, 1) for k, v in per.items() if round(v, 1) > 0}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.collector_threads", description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=3000, help="page views per round (default 3000)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of each handler (default 5)")
    args = parser.parse_args(argv)
    without, with_mw, host = handlers()
    apps = {"A (no middleware)": without, "B (ClickstreamMiddleware)": with_mw}
    for app in apps.values():
        one_round(app, min(args.requests, 500), host)  # warm-up: tables, caches, producer, salt
    results: dict[str, list[tuple[float, dict[str, float]]]] = {name: [] for name in apps}
    for r in range(args.rounds):
        for name in list(apps) if r % 2 == 0 else list(apps)[::-1]:
            results[name].append(one_round(apps[name], args.requests, host))
    medians = {name: statistics.median(p for p, _ in rounds) for name, rounds in results.items()}
    for name, rounds in results.items():
        print(f"{name}: median {medians[name]:.1f} µs of process CPU per request")
        for process_us, per in rounds:
            print(f"    {process_us:8.1f}  {per}")
    a, b = medians.values()
    print(f"B - A: {b - a:+.1f} µs per tracked page view ({a / b:.3f} of A's requests per CPU second)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
