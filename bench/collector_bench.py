"""Collector benchmark: what ClickstreamMiddleware costs a Django site, and what a beacon costs
the collector, as throughput ratios measured side by side in one run.

    python -m bench.collector_bench [-d 10] [-r 3] [--cpus auto|none] [--stack auto|env|own]
    python -m bench.collector_bench --instructions [--requests 300] [-r 2]

Stack: with ``KAFKA_BOOTSTRAP_SERVERS`` set the stack it names is used; otherwise Redis and
Kafka are started with ``python -m deploy.local.stack`` on the bench's own ports
(``FOOTFALL_BENCH_KAFKA_PORT``/``_REDIS_PORT``, 39092/36379) and stopped at the end.

Four gunicorns serve the project (bench/settings_bench.py, bench/urls.py): A and A2 as it is,
B with ClickstreamMiddleware, C as it is for the beacon pair. After 30 s of tracked traffic
(the broker's JIT settles) and a warm-up of each variant, rounds alternate the variants
(reversed every other round) under wrk. Ratios are medians over rounds of per-round ratios:
``B_page / A_page`` (goal >= 0.95; also against A's twin A2, and UNRESOLVED when the two
disagree or the A/A control ``A2_page / A_page`` is off 1.00 by more than the margin) and
``A_collect / A_empty`` (beacon, goal >= 0.80). Per variant: req/s, p50/p99, statuses, server
CPU per request, and the events on Kafka against the 2xx wrk saw. By default the servers run on
every CPU but the last and wrk and a private stack on the last (``--cpus``).

``--instructions``: instructions per tracked page view under callgrind instead (see
bench/collector_instructions.py). JSON: ``artifacts/bench/collector.json`` (or
``collector_instructions.json``). Exit status 1 when the benchmark itself failed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import collector_instructions, collector_report, harness
from bench.harness import REPO, BenchError, Server, Watermarks

OUT = REPO / "artifacts" / "bench"


@dataclass(frozen=True)
class Variant:
    key: str
    server: str  # "A", "A2", "C" (Footfall's settings) or "B" (+ ClickstreamMiddleware)
    method: str
    path: str
    mode: str  # the wrk script's FFBENCH_MODE
    tracked: bool  # each 2xx should put one event on Kafka


VARIANTS = (
    Variant("A_page", "A", "GET", "/bench/page", "get", tracked=False),
    Variant("B_page", "B", "GET", "/bench/page", "get", tracked=True),
    Variant("A2_page", "A2", "GET", "/bench/page", "get", tracked=False),
    Variant("A_empty", "C", "GET", "/bench/empty", "get", tracked=False),
    Variant("A_collect", "C", "POST", "/collect", "beacon", tracked=True),
)


def gunicorn_args(workers: int, threads: int) -> list[str]:
    # gthread keeps connections alive as behind a proxy (sync workers would make wrk measure
    # TCP set-up); a few threads overlap the short waits (Redis salt, SQLite) as in production.
    return [
        "--worker-class", "gthread", "--workers", str(workers), "--threads", str(threads),
        "--keep-alive", "5", "--timeout", "60", "--graceful-timeout", "15", "--log-level", "warning",
    ]  # fmt: skip


class Bench:
    """The servers and the Kafka counter of one run."""

    def __init__(self, args: argparse.Namespace, workdir: Path, cleanup: contextlib.ExitStack) -> None:
        self.args, self.split = args, args.cpu_split
        if self.split is not None:  # before the stack starts: its Kafka and Redis inherit it, as wrk does
            os.sched_setaffinity(0, self.split.rest)
        self.stack = harness.use_stack(args.stack, workdir, cleanup, ("redis", "kafka"))
        env = harness.bench_env(self.stack.env, workdir)
        harness.create_site(env)
        # Every server gets the variable, "0" or "1": environments of the same size.
        gargs, cpus = gunicorn_args(args.workers, args.gunicorn_threads), self.split and self.split.servers
        self.servers = {
            name: Server(name, {**env, "FOOTFALL_BENCH_MIDDLEWARE": flag}, gargs, workdir / f"{name}.log", cpus=cpus)
            for name, flag in (("A", "0"), ("B", "1"), ("A2", "0"), ("C", "0"))
        }
        for server in self.servers.values():
            cleanup.callback(server.stop)
            server.start()
        self.marks = Watermarks(env)
        cleanup.callback(self.marks.close)

    def cpus(self) -> str:
        if self.split is None:
            return "CPUs shared by servers, wrk and stack"
        return self.split.describe() + ("" if self.stack.own else " (the environment's stack: not moved)")

    def wrk(self, var: Variant, duration: float) -> dict[str, Any]:
        url = self.servers[var.server].url + var.path
        return harness.run_wrk(url, var.mode, self.args.threads, self.args.connections, duration)

    def warm_up(self) -> None:
        """Tracked traffic (B's pages and C's beacons in turn) for ``--broker-warmup`` seconds,
        so the broker has compiled its hot paths; then every variant (caches, producers, salts)."""
        tracked = [var for var in VARIANTS if var.tracked]
        left, turn = self.args.broker_warmup, 0
        while left > 0:
            self._check_warm(tracked[turn % len(tracked)], min(15.0, left))
            left, turn = left - 15.0, turn + 1
        for var in VARIANTS:
            self._check_warm(var, self.args.warmup)

    def _check_warm(self, var: Variant, seconds: float) -> None:
        run = self.wrk(var, seconds)
        if any(not 200 <= int(code) < 300 for code in run["statuses"]):
            raise BenchError(f"warm-up of {var.key} answered {run['statuses']}")

    def measure(self, var: Variant) -> dict[str, Any]:
        """One wrk run of ``var``: throughput, latency, statuses, CPU, events on Kafka."""
        start_events = self.marks.settled(quiet=0.5)
        server = self.servers[var.server]
        before = (server.cpu_s(), harness.own_cpu_seconds(children=True), harness.machine_busy_seconds())
        window = time.monotonic()
        run = self.wrk(var, self.args.duration)
        produced = self.marks.settled() - start_events  # the middleware delivers after answering
        server_cpu = server.cpu_s() - before[0]
        wrk_cpu = harness.own_cpu_seconds(children=True) - before[1]
        others = harness.machine_busy_seconds() - before[2] - server_cpu - wrk_cpu  # incl. the idle servers'
        window = time.monotonic() - window
        statuses = {int(k): v for k, v in run["statuses"].items()}
        return {
            "rps": run["requests"] / (run["duration_us"] / 1e6),
            "p50_ms": run["latency_us"]["p50"] / 1000,
            "p99_ms": run["latency_us"]["p99"] / 1000,
            "requests": run["requests"],
            "statuses": statuses,
            "non_2xx": sum(n for code, n in statuses.items() if not 200 <= code < 300),
            "socket_errors": {k: v for k, v in run["errors"].items() if k != "status" and v},
            "others_cpu_share": round(max(others, 0.0) / (window * (os.cpu_count() or 1)), 3),
            "server_cpu_ms_per_req": round(server_cpu * 1000 / max(run["requests"], 1), 4),
            "events_produced": produced,
            "events_expected": sum(n for c, n in statuses.items() if 200 <= c < 300) if var.tracked else 0,
        }

    def run(self) -> dict[str, list[dict[str, Any]]]:
        args = self.args
        servers = ", ".join(f"{name} {server.url}" for name, server in self.servers.items())
        load = f"wrk -t{args.threads} -c{args.connections} -d{args.duration:g}s, {args.rounds} rounds"
        print(f"stack: {self.stack.description}; {servers}; {load}; {self.cpus()}", flush=True)
        self.warm_up()
        runs: dict[str, list[dict[str, Any]]] = {var.key: [] for var in VARIANTS}
        for round_no in range(args.rounds):
            for var in VARIANTS if round_no % 2 == 0 else tuple(reversed(VARIANTS)):
                result = self.measure(var)
                runs[var.key].append(result)
                print(
                    f"round {round_no + 1}/{args.rounds} {var.key:<10} {result['rps']:7.0f} req/s  "
                    f"p50 {result['p50_ms']:6.1f} ms  p99 {result['p99_ms']:6.1f} ms  "
                    f"server CPU {result['server_cpu_ms_per_req']:.3f} ms/req  statuses {result['statuses']}  "
                    f"events {result['events_produced']}/{result['events_expected']}",
                    flush=True,
                )
        return runs


def _commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    return out.stdout.strip() or "unknown"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="python -m bench.collector_bench", description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("-t", "--threads", type=int, default=2, help="wrk threads (default 2)")
    add("-c", "--connections", type=int, default=32, help="wrk connections (default 32)")
    add("-d", "--duration", type=float, default=10, help="seconds per measured run (default 10)")
    add("-w", "--warmup", type=float, default=5, help="seconds of warm-up per variant (default 5)")
    add("--broker-warmup", type=float, default=30, help="seconds of tracked traffic first (default 30)")
    add("-r", "--rounds", type=int, default=None, help="rounds over all variants (default 3; 2 with --instructions)")
    add("--workers", type=int, default=2, help="gunicorn worker processes (default 2)")
    add("--gunicorn-threads", type=int, default=4, help="threads per gunicorn worker (default 4)")
    add("--stack", choices=("auto", "env", "own"), default="auto", help="see above")
    add("--cpus", choices=("auto", "none"), default="auto", help="servers on CPUs apart from wrk and the stack")
    add("--instructions", action="store_true", help="count instructions per page view under callgrind instead")
    add("--requests", type=int, default=300, help="--instructions: page views per phase (default 300)")
    add("--json", type=Path, default=None, help="where to write the results")
    add("--keep-workdir", action="store_true", help="keep gunicorn logs and the bench database")
    if argv and argv[0] == collector_instructions.CHILD_FLAG:  # under callgrind
        args = parser.parse_args(argv[2:])
        collector_instructions.child(args.requests, args.rounds, Path(argv[1]))
        sys.stdout.flush()
        os._exit(0)  # no interpreter teardown: valgrind's exit dump is not read anyway
    args = parser.parse_args(argv)
    args.rounds = args.rounds or (2 if args.instructions else 3)
    try:
        args.cpu_split = harness.parse_cpu_split(args.cpus, frozenset(os.sched_getaffinity(0)))
    except ValueError as exc:
        parser.error(f"--cpus {exc}")
    harness.handle_signals()
    workdir = Path(tempfile.mkdtemp(prefix="footfall-bench-"))
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    try:
        with contextlib.ExitStack() as cleanup:
            if not args.keep_workdir:
                cleanup.callback(shutil.rmtree, workdir, True)
            if args.instructions:
                stack = harness.use_stack(args.stack, workdir, cleanup, ("redis", "kafka"))
                doc = collector_instructions.run(args.requests, args.rounds, stack.env, workdir)
                harness.write_json(doc, args.json or OUT / "collector_instructions.json")
                return 0
            harness.debian_tool("wrk")  # fail (or install it) before starting anything
            bench = Bench(args, workdir, cleanup)
            runs = bench.run()
    except (BenchError, subprocess.CalledProcessError) as exc:
        print(f"benchmark FAILED: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted; servers and stack stopped", file=sys.stderr)
        return 130
    config = {
        "wrk": f"-t{args.threads} -c{args.connections} -d{args.duration:g}s (warm-up {args.warmup:g}s)",
        "broker_warmup_s": args.broker_warmup, "rounds": args.rounds,
        "gunicorn": " ".join(gunicorn_args(args.workers, args.gunicorn_threads)),
        "stack": bench.stack.description, "cpu_split": bench.cpus(), "machine": harness.machine(),
        "commit": _commit(), "started": started,
    }  # fmt: skip
    doc = collector_report.build(config, runs, [v.key for v in VARIANTS], args.connections)
    collector_report.print_table(doc, {v.key: f"{v.method} {v.path}" for v in VARIANTS})
    harness.write_json(doc, args.json or OUT / "collector.json")
    return 0 if doc["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
