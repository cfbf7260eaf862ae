"""Instructions per tracked page view, by thread, under callgrind: the collector bench's
``--instructions`` mode, the instrument that does not swing with a shared machine's load.

Two Django WSGI handlers in one process run by ``valgrind --tool=callgrind
--separate-threads=yes``: A without ClickstreamMiddleware, B with it (the bench's page view,
browser-like headers). After a warm-up, rounds alternate A and B; after each phase the
process waits until B's events are on Kafka, then has callgrind dump and reset its counters.
Under valgrind the same work counts the same to about 0.1 %, but an instruction's cost
(cache misses, the GIL, the kernel's work) is not seen: the ratio printed is a ceiling for
``B_page / A_page``, not an estimate. Only the request thread and the tracker are totalled:
librdkafka's threads and the sink's poll loop run by the clock, which valgrind slows ~50
times (their columns are shown in parentheses).
"""

from __future__ import annotations

import io
import json
import os
import queue
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHILD_FLAG = "--in-callgrind"
CLOCKED = ("rdk:", "footfall-sink", "bench-wait")  # threads whose work follows the clock
VALGRIND_THREAD = re.compile(r"^Thread (\d+): status = .*\(lwpid (\d+)\)$", re.M)
NAMES_FILE = "phases.json"  # written by the child: thread numbers -> names
WSGIApp = Callable[[dict[str, Any], Callable[..., object]], Iterable[bytes]]
AGENTS = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.6 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
)
REFERRERS = ("https://www.google.com/", "", "https://x.com/")
CLIENTS = ("81.2.69.142", "89.160.20.112", "216.160.83.56", "2a02:cf40::1")


@dataclass(frozen=True)
class Dump:
    """One callgrind dump file: the phase it closes, the thread, its instruction count."""

    label: str
    thread: int
    instructions: int


def read_dump(path: Path) -> Dump | None:
    """Label, thread and ``summary`` (Ir) of a callgrind output file; ``None`` for a dump
    this tool did not ask for (valgrind's own at exit)."""
    label = thread = total = None
    with path.open() as lines:
        for line in lines:
            if line.startswith("desc: Trigger: dump "):
                label = line.removeprefix("desc: Trigger: dump ").strip()
            elif line.startswith("thread: "):
                thread = int(line.split()[1])
            elif line.startswith(("summary: ", "totals: ")):
                total = int(line.split()[1])  # the last one wins: summary follows totals
    if label is None or thread is None:
        return None
    return Dump(label, thread, total or 0)  # a thread idle through the phase has no costs


def per_variant(dumps: list[Dump], requests: int) -> dict[str, dict[int, float]]:
    """{variant: {thread: median Ir per page view over its rounds}} from dumps labelled
    ``<variant>.<round>`` (others, like the warm-up's, left out; a missing thread counts 0)."""
    phases: dict[str, dict[int, int]] = {}
    for dump in dumps:
        phases.setdefault(dump.label, {})[dump.thread] = dump.instructions
    threads = sorted({dump.thread for dump in dumps})
    rounds: dict[str, list[dict[int, int]]] = {}
    for label, counts in phases.items():
        variant, _, number = label.rpartition(".")
        if variant and number.isdigit():
            rounds.setdefault(variant, []).append(counts)
    return {v: {t: statistics.median(r.get(t, 0) for r in rs) / requests for t in threads} for v, rs in rounds.items()}


def counted(name: str) -> bool:
    """Whether a thread's instructions are totalled: not those that run by the clock."""
    return not name.startswith(CLOCKED)


def report(results: dict[str, dict[int, float]], names: dict[int, str]) -> list[str]:
    """The table: per variant (the first is the baseline), Ir per page view of each thread
    that did any work, the total of the counted threads, its difference from the baseline's
    and the baseline's total over it (the ceiling of the variant's req/s ratio)."""
    variants = list(results)
    name = {t: names.get(t, f"thread {t}") for t in results[variants[0]]}
    totalled = [t for t in name if counted(name[t])]
    threads = [t for t in sorted(name) if any(results[v][t] >= 50 for v in variants)]
    heads = [name[t] if t in totalled else f"({name[t]})" for t in threads]
    first = max(len("variant"), *(len(v) for v in variants)) + 2
    cols = [max(11, len(h) + 2) for h in heads]
    lines = [
        "variant".ljust(first) + "".join(h.rjust(c) for h, c in zip(heads, cols, strict=True))
        + "      total    vs " + variants[0] + "  ceiling   (Ir per page view; totals leave out the (clocked) threads)"
    ]  # fmt: skip
    base = sum(results[variants[0]][t] for t in totalled)
    for v in variants:
        total = sum(results[v][t] for t in totalled)
        cells = "".join(f"{results[v][t]:>{c},.0f}" for t, c in zip(threads, cols, strict=True))
        lines.append(f"{v:<{first}}{cells}{total:>11,.0f} {total - base:>+9,.0f}  {base / total:>7.3f}")
    return lines


# --- inside callgrind --------------------------------------------------------------------------
def handlers() -> tuple[WSGIApp, WSGIApp]:
    """(A, B): WSGI handlers without and with the middleware, as ``footfall.wsgi`` builds them."""
    os.environ.update(DJANGO_SETTINGS_MODULE="bench.settings_bench", FOOTFALL_BENCH_MIDDLEWARE="1")
    os.environ.update(FOOTFALL_TRUSTED_PROXIES="1", ALLOWED_HOSTS="localhost")
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{tempfile.mkdtemp(prefix='ff-callgrind-')}/db.sqlite3")
    import django

    django.setup()
    from django.conf import settings
    from django.core.handlers.wsgi import WSGIHandler

    with_mw = WSGIHandler()  # reads settings.MIDDLEWARE now
    settings.MIDDLEWARE = [m for m in settings.MIDDLEWARE if not m.endswith("ClickstreamMiddleware")]
    return WSGIHandler(), with_mw


def serve(app: WSGIApp, requests: int) -> None:
    """``requests`` page views to ``app`` as a WSGI server sends them (body read, response
    closed: Django's request_finished); raise if one is not answered 200."""

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: object = None) -> None:
        if not status.startswith("200"):
            raise RuntimeError(f"/bench/page answered {status}")

    for i in range(requests):
        environ = {
            "REQUEST_METHOD": "GET", "PATH_INFO": "/bench/page", "QUERY_STRING": "", "SERVER_NAME": "localhost",
            "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1", "HTTP_HOST": "localhost", "REMOTE_ADDR": "127.0.0.1",
            "HTTP_USER_AGENT": AGENTS[i % len(AGENTS)], "HTTP_REFERER": REFERRERS[i % len(REFERRERS)],
            "HTTP_X_FORWARDED_FOR": CLIENTS[i % len(CLIENTS)], "HTTP_X_FORWARDED_PROTO": "https",
            "wsgi.input": io.BytesIO(b""), "wsgi.url_scheme": "http", "wsgi.errors": sys.stderr,
        }  # fmt: skip
        body = app(environ, start_response)
        b"".join(body)
        getattr(body, "close", lambda: None)()


def thread_names() -> dict[int, str]:
    """Native thread id -> Python's thread name, else the kernel's (librdkafka names its own)."""
    tasks, names = Path("/proc/self/task"), {}
    for tid in os.listdir(tasks):
        try:
            names[int(tid)] = (tasks / tid / "comm").read_text().strip()
        except OSError:
            continue
    names.update({t.native_id: t.name for t in threading.enumerate() if t.native_id is not None})
    names[threading.get_native_id()] = "request"
    return names


def child(requests: int, rounds: int, out: Path) -> None:
    """The phases, each closed by a dump; B's phases end once their events are on Kafka."""
    from bench.harness import Watermarks

    a, b = handlers()
    marks = Watermarks(os.environ)
    targets: queue.SimpleQueue[int] = queue.SimpleQueue()
    delivered = threading.Event()
    # One waiter for the whole run, alive at the end so it is named (and left out of the totals).
    threading.Thread(target=_waiter, args=(marks, targets, delivered), name="bench-wait", daemon=True).start()
    expected = marks.total()  # events on the topic once B's phases so far are delivered

    def phase(app: WSGIApp, count: int, label: str) -> None:
        nonlocal expected
        serve(app, count)
        if app is b:
            expected += count
            targets.put(expected)
            delivered.wait()
            delivered.clear()
        subprocess.run(["callgrind_control", f"--dump={label}", str(os.getpid())], check=True, capture_output=True)

    phase(a, min(requests, 300), "warm-up")  # tables, caches, producer, salt
    phase(b, min(requests, 300), "warm-up")
    for r in range(rounds):
        for name, app in (("A", a), ("B", b)) if r % 2 == 0 else (("B", b), ("A", a)):
            phase(app, requests, f"{name}.{r}")
    listing = subprocess.run(
        ["vgdb", f"--pid={os.getpid()}", "v.info", "scheduler"], capture_output=True, text=True, check=True
    )  # valgrind's thread numbers and kernel ids (a later thread may reuse an ended one's number)
    native = thread_names()
    threads = {int(n): native.get(int(lwp), f"lwp {lwp}") for n, lwp in
               VALGRIND_THREAD.findall(listing.stdout + listing.stderr) if lwp != "0"}  # fmt: skip
    (out / NAMES_FILE).write_text(json.dumps(threads))


def _waiter(marks: Any, targets: queue.SimpleQueue[int], delivered: threading.Event) -> None:
    """For each target, wait (by the clock) until the topic holds that many events."""
    while True:
        target, deadline = targets.get(), time.monotonic() + 120
        while marks.total() < target and time.monotonic() < deadline:
            time.sleep(0.5)
        delivered.set()  # on time or not: a late phase shows in the tracker's column


# --- outside ---------------------------------------------------------------------------------------
def run(requests: int, rounds: int, env: dict[str, str], workdir: Path) -> dict[str, Any]:
    """Run the child under callgrind; print the table; the result document."""
    from bench.harness import PYTHON, REPO, BenchError, debian_tool

    argv = [debian_tool("valgrind"), "--tool=callgrind", "--separate-threads=yes", "--dump-line=no",
            f"--callgrind-out-file={workdir}/callgrind.%p", PYTHON, "-m", "bench.collector_bench",
            CHILD_FLAG, str(workdir), "--requests", str(requests), "-r", str(rounds)]  # fmt: skip
    print(f"running under callgrind ({rounds} rounds of {requests} page views per variant)", flush=True)
    started = time.monotonic()
    done = subprocess.run(argv, env={**env, "PYTHONHASHSEED": "0"}, cwd=REPO, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise BenchError(f"the callgrind run failed ({done.returncode}):\n{done.stderr[-3000:]}")
    dumps = [d for p in workdir.glob("callgrind.*.*-*") if (d := read_dump(p)) is not None]
    measured = per_variant(dumps, requests)
    results = {v: measured[v] for v in ("A", "B")}
    names = {int(k): v for k, v in json.loads((workdir / NAMES_FILE).read_text()).items()}
    for line in report(results, names):
        print(line)
    print(f"({time.monotonic() - started:.0f} s under callgrind)")
    return {"benchmark": "collector_instructions", "requests": requests, "rounds": rounds, "threads": names,
            "counted": [t for t in sorted(names) if counted(names[t])],
            "ir_per_page_view": {v: {str(t): round(x) for t, x in r.items()} for v, r in results.items()}}  # fmt: skip
