"""Instructions per tracked page view, by thread: ClickstreamMiddleware under callgrind.

Run from the repository root (about 4 minutes with the defaults; needs valgrind, installed
with ``apt-get`` when missing and running as root)::

    ~/.cache/footfall/venv/bin/python -m bench.collector_instructions [--requests 300] [--rounds 2]
        [--without geolocate,parse_user_agent] [--stack auto|env|own]

Why: CPU time per request on a shared VM swings by ±12 % between rounds of 500 page views
(bench/README.md), more than the effects worth measuring here (a few µs of a ~700 µs page).
Instructions executed do not swing: under valgrind the same work counts the same to about
0.1 %, so a change to the middleware's work can be checked, and its parts ranked, in one run.
What it does not see is the cost of an instruction (cache misses, the GIL's hand-overs, the
threads running side by side on two cores) or the kernel's work (futex wake-ups, sockets):
on real hardware the middleware costs more than its instruction count says, never less. The
ratio printed is therefore a ceiling for the collector benchmark's ``B_page / A_page``, not
an estimate of it. Only the request thread and the tracker count towards it: librdkafka's
threads and the sink's poll loop also run by the clock, which valgrind slows ~50 times
(see :func:`counted`); their columns are shown in parentheses.

How: the same two WSGI handlers as ``bench.collector_threads`` (A without the middleware, B
with it; the benchmark's page view) in one process run by ``valgrind --tool=callgrind
--separate-threads=yes``. After a warm-up, rounds alternate A and B (and each ``--without``
variant: B with those enrichment steps left out); after each phase the process waits for the
tracker and the producer to finish the phase's events, then asks callgrind to dump its
counters (``callgrind_control --dump``), which resets them. Each dump is one phase: Ir per
page view per thread, median over rounds per variant. The stack (Redis and Kafka) is the
environment's or a private one, as for ``bench.collector_bench`` (``--stack``). Prints a table
and writes ``artifacts/bench/collector_instructions.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import harness
from footfall_capture.enrich.steps import DEFAULT_STEPS  # the middleware's default steps: pure code, no Django needed

CHILD_FLAG = "--in-callgrind"
CLOCKED = ("rdk:", "footfall-sink")  # thread names whose work follows the clock (see counted)
VALGRIND_THREAD = re.compile(r"^Thread (\d+): status = .*\(lwpid (\d+)\)$", re.M)
NAMES_FILE = "phases.json"  # written by the child: the variants in order, thread numbers -> names


@dataclass(frozen=True)
class Dump:
    """One callgrind dump file: the phase it closes, the thread, and its instruction count."""

    label: str
    thread: int
    instructions: int


def read_dump(path: Path) -> Dump | None:
    """The label, thread and ``summary`` (Ir) of a callgrind output file; ``None`` for a dump
    this tool did not ask for (valgrind's own at exit, labelled ``Program termination``)."""
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
    """{variant: {thread: median Ir per page view over its rounds}}, from dumps labelled
    ``<variant>.<round>`` (others, like the warm-up's, are left out). A thread missing from
    a round's dump counts 0 there."""
    phases: dict[str, dict[int, int]] = {}
    for dump in dumps:
        phases.setdefault(dump.label, {})[dump.thread] = dump.instructions
    threads = sorted({dump.thread for dump in dumps})
    rounds: dict[str, list[dict[int, int]]] = {}
    for label, counts in phases.items():
        variant, _, number = label.rpartition(".")
        if variant and number.isdigit():
            rounds.setdefault(variant, []).append(counts)
    return {
        variant: {t: statistics.median(r.get(t, 0) for r in rs) / requests for t in threads}
        for variant, rs in rounds.items()
    }


def counted(name: str) -> bool:
    """Whether a thread's instructions count towards the totals: those of the threads that run
    because a page view made them (the request thread, ``footfall-tracker``), not those of the
    threads that also run by the clock (librdkafka's ``rdk:*``, with their linger windows and
    timers, and ``footfall-sink``'s poll loop). Valgrind runs the process ~50 times slower, so
    the clock's share per page view is ~50 times what it is natively and moves with the
    machine's load: in one run the broker thread read 5,500 Ir per page view for some
    variants and 29,000 for others. ``bench.collector_threads`` measures those threads'
    native CPU instead."""
    return not name.startswith(CLOCKED)


def report(results: dict[str, dict[int, float]], names: dict[int, str]) -> list[str]:
    """The table, one row per variant in ``results``' order (the first is the baseline):
    Ir per page view of each thread that did any work, the total over the :func:`counted`
    threads, its difference from the baseline's, and the baseline's total over the row's:
    the ceiling of the row's req/s ratio to the baseline (the same instructions never cost
    less on the row's page than on the baseline's)."""
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


# --- inside callgrind -------------------------------------------------------------------------------
def _dump(label: str) -> None:
    subprocess.run(["callgrind_control", f"--dump={label}", str(os.getpid())], check=True, capture_output=True)


def _thread_names() -> dict[int, str]:
    """Callgrind's thread numbers (valgrind's) -> thread names, from valgrind's own list of its
    threads and their kernel ids (``vgdb v.info scheduler``). Not from the order the threads
    started: valgrind gives a later thread the number of one that ended (librdkafka's
    bootstrap broker thread ends once the cluster's brokers are known)."""
    from bench.collector_threads import thread_names

    listing = subprocess.run(
        ["vgdb", f"--pid={os.getpid()}", "v.info", "scheduler"], capture_output=True, text=True, check=True
    )
    names = thread_names()
    return {
        int(number): names.get(int(lwp), f"lwp {lwp}")
        for number, lwp in VALGRIND_THREAD.findall(listing.stdout + listing.stderr)
        if lwp != "0"  # a free slot
    }


def child(requests: int, rounds: int, without: list[list[str]], out: Path) -> None:
    """Runs under callgrind: the phases, each closed by a dump (see the module docstring)."""
    from bench.collector_threads import WSGIApp, handlers, serve

    a, b, host = handlers()  # sets Django up: the collector's modules import only after it
    from footfall_capture.middleware import ClickstreamMiddleware

    # Django keeps middleware instances only inside the handler's chain of closures.
    (middleware,) = [o for o in gc.get_objects() if isinstance(o, ClickstreamMiddleware)]
    all_steps = middleware.steps
    variants = {"A": (a, all_steps), "B": (b, all_steps)}
    for left_out in without:
        variants["B-" + "-".join(left_out)] = (b, tuple(s for s in all_steps if s.__name__ not in left_out))

    def phase(app: WSGIApp, steps: tuple[Any, ...], count: int) -> None:
        middleware.steps = steps  # read by each job when it runs: set while none is queued
        serve(app, count, host)
        if not middleware.worker.drain(60):  # under valgrind a job takes milliseconds
            raise RuntimeError("the tracker did not finish the phase's events within 60 s")
        if middleware.sink.flush(30):
            raise RuntimeError("Kafka did not take the phase's events within 30 s")

    for app, steps in variants.values():
        phase(app, steps, min(requests, 300))  # warm-up: tables, caches, producer, salt
    _dump("warm-up")
    order = list(variants)
    for r in range(rounds):
        for name in order if r % 2 == 0 else order[::-1]:
            phase(*variants[name], requests)
            _dump(f"{name}.{r}")
    (out / NAMES_FILE).write_text(json.dumps({"variants": order, "threads": _thread_names()}))


# --- outside ------------------------------------------------------------------------------------
def run(args: argparse.Namespace, cleanup: contextlib.ExitStack) -> dict[str, Any]:
    valgrind = harness.debian_tool("valgrind")
    out = Path(cleanup.enter_context(tempfile.TemporaryDirectory(prefix="ff-callgrind-")))
    stack = harness.use_stack(args.stack, out, cleanup)
    env = {**stack.app_env, "PYTHONHASHSEED": "0"}  # same dict layouts, same work, run to run
    argv = [valgrind, "--tool=callgrind", "--separate-threads=yes", "--dump-line=no",
            f"--callgrind-out-file={out}/callgrind.%p", harness.PYTHON, "-m", "bench.collector_instructions",
            CHILD_FLAG, str(out), "--requests", str(args.requests), "--rounds", str(args.rounds),
            *(f"--without={w}" for w in args.without)]  # fmt: skip
    print(f"running under callgrind ({args.rounds} rounds of {args.requests} page views per variant)", flush=True)
    started = time.monotonic()
    done = subprocess.run(argv, env=env, cwd=harness.REPO, stderr=subprocess.PIPE, text=True, check=False)
    if done.returncode != 0:
        raise harness.BenchError(f"the callgrind run failed ({done.returncode}):\n{done.stderr[-3000:]}")
    dumps = [d for p in out.glob("callgrind.*.*-*") if (d := read_dump(p)) is not None]
    seen = json.loads((out / NAMES_FILE).read_text())
    measured = per_variant(dumps, args.requests)
    results = {v: measured[v] for v in seen["variants"]}  # A, B, then the --without variants
    names = {int(k): v for k, v in seen["threads"].items()}
    for line in report(results, names):
        print(line)
    print(f"({time.monotonic() - started:.0f} s under callgrind; stack: {stack.description})")
    return {"requests": args.requests, "rounds": args.rounds, "threads": names,
            "counted": [t for t in sorted(names) if counted(names[t])],
            "ir_per_page_view": {v: {str(t): round(x) for t, x in r.items()} for v, r in results.items()}}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(
        prog="python -m bench.collector_instructions", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--requests", type=int, default=300, help="page views per phase (default 300)")
    parser.add_argument("--rounds", type=int, default=2, help="phases of each variant (default 2)")
    parser.add_argument("--without", action="append", default=[], metavar="STEP[,STEP]",
                        help="also run B without these enrichment steps (repeatable: one variant each)")  # fmt: skip
    parser.add_argument("--stack", choices=("auto", "env", "own"), default="auto")
    parser.add_argument(
        "--json", type=Path, default=harness.REPO / "artifacts" / "bench" / "collector_instructions.json"
    )
    if argv and argv[0] == CHILD_FLAG:
        out = Path(argv[1])
        args = parser.parse_args(argv[2:])
        child(args.requests, args.rounds, [w.split(",") for w in args.without], out)
        sys.stdout.flush()
        os._exit(0)  # no interpreter teardown: valgrind's exit dump is not read anyway
    args = parser.parse_args(argv)
    steps = [step.__name__ for step in DEFAULT_STEPS]
    unknown = sorted({name for w in args.without for name in w.split(",")} - set(steps))
    if unknown:  # before valgrind's minute of start-up
        parser.error(f"--without: no such step {unknown}; the steps are {steps}")
    harness.handle_signals()
    with contextlib.ExitStack() as cleanup:
        try:
            result = run(args, cleanup)
        except harness.BenchError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
