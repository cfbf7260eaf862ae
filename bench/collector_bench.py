"""Collector benchmark: what ClickstreamMiddleware costs a Django site, and what a beacon
costs the collector, as throughput ratios measured side by side in one run.

Run from the repository root::

    ~/.cache/footfall/venv/bin/python -m bench.collector_bench            # defaults below
    ~/.cache/footfall/venv/bin/python -m bench.collector_bench -d 20 -r 5 # longer, more rounds

Stack: with ``KAFKA_BOOTSTRAP_SERVERS`` set (``eval "$(python -m deploy.local.stack env)"``)
the stack it names is used and must be up; otherwise the script starts a private Redis and
Kafka on its own ports (``FOOTFALL_BENCH_KAFKA_PORT`` 39092, ``..._REDIS_PORT`` 36379) in
a temporary directory and stops it at the end (``--stack env|own`` forces either).

What is measured. Four gunicorns serve the same project (bench/settings_bench.py,
bench/urls.py): A and A2 as it is, B with ClickstreamMiddleware and
``FOOTFALL_SITE_ID=bench``, and C as it is for the beacon pair. wrk loads them over
loopback: 30 s of tracked traffic so the Kafka broker's JIT settles (``--broker-warmup``),
a warm-up of each variant, then rounds that alternate the variants (order reversed every
other round, so machine drift hits all of them alike):

* ``A_page`` / ``B_page``: GET /bench/page, a small HTML page that B records as a page view;
  middleware ratio = the median over rounds of B / A (goal >= 0.95);
* ``A2_page`` / ``A_page``: the same page on two identical servers, an A/A control with no
  goal. On a shared VM two instances of one server can differ by more than the middleware
  goal's 5 % margin (bench/README.md, eighth round), so B is also compared with A2 (same
  goal), and the middleware goal's verdict is PASS or FAIL only when both comparisons
  agree and the control is within the goal's margin of 1.00, UNRESOLVED otherwise
  (bench/collector_report.py);
* ``A_collect`` / ``A_empty``: POST /collect with a tracker-like beacon vs. a bare 204 view,
  both on C; beacon ratio = the median over rounds of collect / empty (goal >= 0.80). On their own
  server so that A and A2 serve exactly the same traffic.

CPUs: by default (``--cpus auto``) the four gunicorns run on every CPU but the last, and the
bench, wrk and a private stack's Kafka and Redis on the last one, as a web server's cores
serve only the web app in production; ``--cpus none`` lets all of them share every CPU
(bench/README.md, eleventh round, says what the sharing cost the tracked variants).

Per variant: median requests/s over the rounds, p50/p99 latency (medians over rounds),
status counts, CPU time per request of the server and of the Kafka broker (bench/cpu.py),
and the events the run added to the events topic (Kafka high watermarks, read once the
topic is quiet) against the 202s (beacons) or 200s (tracked pages) wrk saw. Results: a
table on stdout and JSON in ``artifacts/bench/collector.json`` (bench/collector_report.py).

Exit status: 0 when the measurement completed, whether or not the goals are met; 1 when
the benchmark itself failed (a non-2xx answer or socket error, a server that did not start).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench import collector_report, harness
from bench.cpu import CpuMeter, stack_pid
from bench.harness import REPO, BenchError, Server, Watermarks


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
    # The same for A and B. gthread, because it is how Django is usually served behind a
    # keep-alive proxy: sync workers close every connection, so wrk would mostly measure
    # TCP set-up. One process per core (2 here): each has its own GIL. A few threads per
    # process overlap the short waits (Redis salt, SQLite site lookups) as in production,
    # and B's tracker thread competes with them for the GIL exactly as it would there.
    return [
        "--worker-class", "gthread", "--workers", str(workers), "--threads", str(threads),
        "--keep-alive", "5", "--timeout", "60", "--graceful-timeout", "15", "--log-level", "warning",
    ]  # fmt: skip


class Bench:
    """The servers, the Kafka counter and the CPU meter of one benchmark run."""

    def __init__(self, args: argparse.Namespace, workdir: Path, cleanup: contextlib.ExitStack) -> None:
        self.args = args
        self.split: harness.CpuSplit | None = args.cpu_split
        if self.split is not None:  # before the stack starts: a private stack's Kafka and Redis inherit it, as wrk does
            os.sched_setaffinity(0, self.split.rest)
        self.stack = harness.use_stack(args.stack, workdir, cleanup)
        env = harness.bench_env(self.stack.app_env, workdir)
        if args.beacon_middleware:
            env["FOOTFALL_BENCH_BEACON_MIDDLEWARE"] = "1"
        harness.create_site(env)
        gargs = gunicorn_args(args.workers, args.gunicorn_threads)
        # Every server gets the variable, "0" or "1", so their environments differ in that one
        # value and not in size (the environment's size moves a process's initial stack,
        # which can shift its speed by a few per cent).
        self.servers = {
            name: Server(
                name,
                {**env, "FOOTFALL_BENCH_MIDDLEWARE": flag},
                gargs,
                workdir / f"gunicorn-{name}.log",
                cpus=self.split.servers if self.split else None,
            )
            for name, flag in (("A", "0"), ("B", "1"), ("A2", "0"), ("C", "0"))
        }
        for server in self.servers.values():
            cleanup.callback(server.stop)
            server.start()
        self.marks = Watermarks(env)
        cleanup.callback(self.marks.close)
        kafka = stack_pid("kafka", self.stack.stack_env) if self.stack.stack_env else None
        groups = {f"server_{name}": s.proc.pid if s.proc else None for name, s in self.servers.items()}
        self.meter = CpuMeter({**groups, "kafka": kafka})

    def cpus(self) -> str:
        if self.split is None:
            return "CPUs shared by servers, wrk and stack"
        # A stack from the environment was started by someone else, on whatever CPUs it has.
        return self.split.describe() + ("" if self.stack.own else " (the environment's stack: not moved)")

    def wrk(self, var: Variant, duration: float) -> dict:
        url = self.servers[var.server].url + var.path
        return harness.run_wrk(url, var.mode, self.args.threads, self.args.connections, duration)

    def warm_up(self) -> None:
        """Caches, DB connections, Kafka producers and salts: the first beacons of a fresh
        worker take a good part of a second."""
        for var in VARIANTS:
            self._check_warm(var, self.wrk(var, self.args.warmup))

    @staticmethod
    def _check_warm(var: Variant, run: dict) -> None:
        if any(not 200 <= int(code) < 300 for code in run["statuses"]):
            raise BenchError(f"warm-up of {var.key} answered {run['statuses']}")

    def warm_broker(self) -> None:
        """Real tracked traffic (page views through B, beacons through C, alternating in
        slices of at most 15 s) for ``--broker-warmup`` seconds, before anything is measured.

        Why: a JVM broker compiles its hot paths after it starts. A private stack's broker
        runs with C1 only (``harness.PRIVATE_BROKER_JVM``), which settles within ~20 s of
        traffic; with C2 (a stack from the environment) it takes minutes. Both tracking servers'
        producers take part, so no round meets a broker that has not yet seen them. A
        slice's broker CPU per event is printed so a reader can see it settle."""
        tracked = [var for var in VARIANTS if var.tracked]
        left, turn = self.args.broker_warmup, 0
        while left > 0:
            var, seconds = tracked[turn % len(tracked)], min(15.0, left)
            before = self.meter.snapshot()
            run = self.wrk(var, seconds)
            self._check_warm(var, run)
            kafka = CpuMeter.delta(before, self.meter.snapshot()).get("kafka")
            per_event = f"{kafka * 1e6 / max(run['requests'], 1):.0f} µs" if kafka is not None else "n/a"
            print(f"broker warm-up {var.key:<10} {seconds:4.0f} s  broker CPU per event {per_event}", flush=True)
            left, turn = left - seconds, turn + 1

    def measure(self, var: Variant) -> dict:
        """One wrk run of ``var``: throughput, latency, statuses, CPU, events on Kafka."""
        start_events = self.marks.settled(quiet=0.5)
        cpu_before, window = self.meter.snapshot(), time.monotonic()
        run = self.wrk(var, self.args.duration)
        produced = self.marks.settled() - start_events  # the middleware delivers after answering
        cpu = CpuMeter.delta(cpu_before, self.meter.snapshot())
        window = time.monotonic() - window
        statuses = {int(k): v for k, v in run["statuses"].items()}
        requests = max(run["requests"], 1)
        server_cpu = cpu.get(f"server_{var.server}", 0.0)
        return {
            "rps": run["requests"] / (run["duration_us"] / 1e6),
            "p50_ms": run["latency_us"]["p50"] / 1000,
            "p99_ms": run["latency_us"]["p99"] / 1000,
            "requests": run["requests"],
            "statuses": statuses,
            "non_2xx": sum(n for code, n in statuses.items() if not 200 <= code < 300),
            "socket_errors": {k: v for k, v in run["errors"].items() if k != "status" and v},
            "cpu_s": cpu,
            # Share of the machine's CPU that went to other work (other tenants) meanwhile.
            "others_cpu_share": round(cpu["other"] / (window * (os.cpu_count() or 1)), 3),
            "server_cpu_ms_per_req": round(server_cpu * 1000 / requests, 4),
            "kafka_cpu_ms_per_req": round(cpu.get("kafka", 0.0) * 1000 / requests, 4) if "kafka" in cpu else None,
            "events_produced": produced,
            "events_expected": sum(n for c, n in statuses.items() if 200 <= c < 300) if var.tracked else 0,
        }

    def run(self) -> dict[str, list[dict]]:
        args = self.args
        servers = ", ".join(f"{name} {server.url}" for name, server in self.servers.items())
        load = f"wrk -t{args.threads} -c{args.connections} -d{args.duration:g}s, {args.rounds} rounds"
        print(f"stack: {self.stack.description}; {servers}; {load}; {self.cpus()}", flush=True)
        self.warm_broker()
        self.warm_up()
        runs: dict[str, list[dict]] = {var.key: [] for var in VARIANTS}
        for round_no in range(args.rounds):
            for var in VARIANTS if round_no % 2 == 0 else tuple(reversed(VARIANTS)):
                result = self.measure(var)
                runs[var.key].append(result)
                print(
                    f"round {round_no + 1}/{args.rounds} {var.key:<10} {result['rps']:7.0f} req/s  "
                    f"p50 {result['p50_ms']:6.1f} ms  p99 {result['p99_ms']:6.1f} ms  "
                    f"server CPU {result['server_cpu_ms_per_req']:.3f} ms/req  "
                    f"others' CPU {result['others_cpu_share']:.0%}  statuses {result['statuses']}  "
                    f"events {result['events_produced']}/{result['events_expected']}",
                    flush=True,
                )
        return runs


def _commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    return out.stdout.strip() or "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.collector_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("-t", "--threads", type=int, default=2, help="wrk threads (default 2)")
    parser.add_argument("-c", "--connections", type=int, default=32, help="wrk connections (default 32)")
    parser.add_argument("-d", "--duration", type=float, default=10, help="seconds per measured run (default 10)")
    parser.add_argument("-w", "--warmup", type=float, default=5, help="seconds of warm-up per variant (default 5)")
    parser.add_argument(
        "--broker-warmup",
        type=float,
        default=30,
        help="seconds of tracked traffic first, so the broker's JIT has settled (default 30; see Bench.warm_broker)",
    )
    parser.add_argument("-r", "--rounds", type=int, default=3, help="rounds over all variants (default 3)")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes (default 2)")
    parser.add_argument("--gunicorn-threads", type=int, default=4, help="threads per gunicorn worker (default 4)")
    parser.add_argument("--stack", choices=("auto", "env", "own"), default="auto", help="see the module docstring")
    parser.add_argument(
        "--cpus",
        default="auto",
        metavar="SERVERS:REST|auto|none",
        help="run the servers under test on CPUs of their own, apart from wrk and the private stack (e.g. 0:1); "
        "auto (default): every CPU but the last for the servers, the last for the rest; none: all share every CPU",
    )
    parser.add_argument(
        "--beacon-middleware",
        action="store_true",
        help="install collector.middleware.BeaconMiddleware in every server (if Footfall's settings do not yet)",
    )
    parser.add_argument("--json", type=Path, default=REPO / "artifacts" / "bench" / "collector.json")
    parser.add_argument("--keep-workdir", action="store_true", help="keep gunicorn logs and the bench database")
    args = parser.parse_args(argv)
    try:
        args.cpu_split = harness.parse_cpu_split(args.cpus, frozenset(os.sched_getaffinity(0)))
    except ValueError as exc:
        parser.error(f"--cpus {exc}")
    harness.handle_signals()
    harness.debian_tool("wrk")  # fail (or install it) before starting anything
    workdir = Path(tempfile.mkdtemp(prefix="footfall-bench-"))
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    try:
        with contextlib.ExitStack() as cleanup:
            bench = Bench(args, workdir, cleanup)
            runs = bench.run()
    except (BenchError, subprocess.CalledProcessError) as exc:
        print(f"benchmark FAILED: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted; servers and stack stopped", file=sys.stderr)
        return 130
    finally:
        if args.keep_workdir:
            print(f"logs and database kept in {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    config = {
        "wrk": f"-t{args.threads} -c{args.connections} -d{args.duration:g}s (warm-up {args.warmup:g}s)",
        "broker_warmup_s": args.broker_warmup,
        "rounds": args.rounds,
        "gunicorn": " ".join(gunicorn_args(args.workers, args.gunicorn_threads)),
        "stack": bench.stack.description,
        "beacon_middleware": args.beacon_middleware,
        "cpus": os.cpu_count(),
        "cpu_split": bench.cpus(),
        "python": platform.python_version(),
        "commit": _commit(),
        "started": started,
    }
    doc = collector_report.build(config, runs, [v.key for v in VARIANTS], args.connections)
    collector_report.print_table(doc, {v.key: f"{v.method} {v.path}" for v in VARIANTS})
    args.json.parent.mkdir(parents=True, exist_ok=True)
    collector_report.write_json(doc, args.json)
    print(f"JSON: {args.json}")
    return 0 if doc["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
