"""Collector benchmark: what ClickstreamMiddleware costs a Django site and what a beacon costs the collector,
as throughput ratios side by side in one run, or (``--instructions``) as instructions under callgrind. Goals:
``B_page / A_page`` and ``B_page / A2_page`` >= 0.95, ``A_collect / A_empty`` >= 0.80. See bench/README.md."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import queue
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from confluent_kafka import Consumer, TopicPartition

from bench import harness
from bench.harness import OUT, PYTHON, REPO, BenchError, Server

SITE_ID = "bench"


@dataclass(frozen=True)
class Variant:
    key: str
    server: str  # "A", "A2", "C" (Footfall's settings) or "B" (+ ClickstreamMiddleware)
    path: str
    mode: str  # the wrk script's FFBENCH_MODE: "get" or "beacon" (POST)
    tracked: bool  # each 2xx should put one event on Kafka


VARIANTS = (
    Variant("A_page", "A", "/bench/page", "get", tracked=False),
    Variant("B_page", "B", "/bench/page", "get", tracked=True),
    Variant("A2_page", "A2", "/bench/page", "get", tracked=False),
    Variant("A_empty", "C", "/bench/empty", "get", tracked=False),
    Variant("A_collect", "C", "/collect", "beacon", tracked=True),
)
# name: (top, bottom, goal) of a req/s ratio; the A/A control has no goal.
RATIOS = {
    "middleware": ("B_page", "A_page", 0.95),
    "middleware_a2": ("B_page", "A2_page", 0.95),  # the same goal against A's twin
    "beacon": ("A_collect", "A_empty", 0.80),
    "control": ("A2_page", "A_page", None),
}
# A goal's ratios and the control that can leave it unresolved (see verdict()).
VERDICTS = {"middleware": (("middleware", "middleware_a2"), "control"), "beacon": (("beacon",), None)}


def cpu_split(available: frozenset[int]) -> tuple[frozenset[int], frozenset[int]] | None:
    """(servers' CPUs, the rest's): the highest for bench, wrk and private stack, the others for the servers."""
    return None if len(available) < 2 else (available - {max(available)}, frozenset({max(available)}))


class Watermarks:
    """Sum of the events topic's high watermarks: how many events were ever produced."""

    def __init__(self, env: Mapping[str, str]) -> None:
        topic = env.get("FOOTFALL_EVENTS_TOPIC", "events")
        self.consumer = Consumer({"bootstrap.servers": env["KAFKA_BOOTSTRAP_SERVERS"], "group.id": "footfall-bench"})
        partitions = self.consumer.list_topics(topic, timeout=10).topics[topic].partitions
        self.tps = [TopicPartition(topic, p) for p in sorted(partitions)]

    def total(self) -> int:
        return sum(self.consumer.get_watermark_offsets(tp, timeout=5)[1] for tp in self.tps)

    def settled(self, quiet: float = 1.5, limit: float = 60.0) -> int:
        """The total once still for ``quiet`` seconds (the middleware delivers after answering, from a queue)."""
        last, since, deadline = self.total(), time.monotonic(), time.monotonic() + limit
        while time.monotonic() - since < quiet and time.monotonic() < deadline:
            time.sleep(0.25)
            if (now := self.total()) != last:
                last, since = now, time.monotonic()
        return last


class Bench:
    """The servers and the Kafka counter of one run."""

    def __init__(self, args: argparse.Namespace, workdir: Path, cleanup: contextlib.ExitStack) -> None:
        self.args = args
        self.split = cpu_split(frozenset(os.sched_getaffinity(0))) if args.cpus == "auto" else None
        if self.split is not None:  # before the stack starts: its Kafka and Redis inherit it, as wrk does
            os.sched_setaffinity(0, self.split[1])
        stack_env, self.stack = harness.use_stack(args.stack, workdir, cleanup, ("redis", "kafka"))
        # One string-hash seed for every server: with a random seed each, two identical servers
        # lay out their dicts differently and ran steadily ~8 % apart.
        env = harness.server_env(stack_env, workdir, "bench.settings_bench", PYTHONHASHSEED="0",
                                 FOOTFALL_CLIENT_RATE="100000", FOOTFALL_CLIENT_BURST="1000000",
                                 FOOTFALL_TRUSTED_PROXIES="1")  # fmt: skip
        harness.manage(env, "migrate", "--noinput", "-v", "0")
        harness.manage(env, "create_site", SITE_ID, "--domain", "127.0.0.1", "--domain", "localhost")
        # Every server gets the variable, "0" or "1": environments of the same size.
        cpus = self.split and self.split[0]
        self.servers = {
            name: Server(name, {**env, "FOOTFALL_BENCH_MIDDLEWARE": flag}, workdir / f"{name}.log", cpus=cpus)
            for name, flag in (("A", "0"), ("B", "1"), ("A2", "0"), ("C", "0"))
        }
        for server in self.servers.values():
            cleanup.callback(server.stop)
            empty = urllib.request.Request(f"{server.url}/bench/empty", headers={"X-Forwarded-Proto": "https"})
            server.start(lambda r=empty: bool(urllib.request.urlopen(r, timeout=2).status == 204))
        self.marks = Watermarks(env)
        cleanup.callback(self.marks.consumer.close)
        split = self.split and f"servers on CPU {sorted(self.split[0])}, wrk and stack on CPU {sorted(self.split[1])}"
        self.cpus = split or "CPUs shared by servers, wrk and stack"

    def wrk(self, var: Variant, duration: float, check: bool = False) -> dict[str, Any]:
        """One wrk run (2 threads) with ``bench/wrk_collector.lua``; the summary its done() prints."""
        argv = [harness.tool("wrk"), "-t2", f"-c{self.args.connections}", f"-d{duration:g}s", "--latency",
                "--timeout", "10s", "-s", str(Path(__file__).with_name("wrk_collector.lua")),
                self.servers[var.server].url + var.path]  # fmt: skip
        env = {**os.environ, "FFBENCH_MODE": var.mode, "FFBENCH_SITE": SITE_ID}
        out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=duration + 120)
        lines = [line.removeprefix("FFBENCH ") for line in out.stdout.splitlines() if line.startswith("FFBENCH ")]
        if not lines:
            raise BenchError(f"wrk failed (exit {out.returncode}):\n{out.stdout}{out.stderr}")
        run = dict(json.loads(lines[0]))
        if check and any(not 200 <= int(code) < 300 for code in run["statuses"]):
            raise BenchError(f"warm-up of {var.key} answered {run['statuses']}")
        return run

    def measure(self, var: Variant) -> dict[str, Any]:
        """One wrk run of ``var``: throughput, latency, statuses, CPU, events on Kafka."""
        start_events, server = self.marks.settled(quiet=0.5), self.servers[var.server]
        server_cpu = server.cpu_s()
        run = self.wrk(var, self.args.duration)
        produced = self.marks.settled() - start_events  # the middleware delivers after answering
        server_cpu = server.cpu_s() - server_cpu
        statuses = {int(k): v for k, v in run["statuses"].items()}
        ok = sum(n for code, n in statuses.items() if 200 <= code < 300)
        return {
            "rps": run["requests"] / (run["duration_us"] / 1e6), "p50_ms": run["latency_us"]["p50"] / 1000,
            "p99_ms": run["latency_us"]["p99"] / 1000, "requests": run["requests"], "statuses": statuses,
            "non_2xx": run["requests"] - ok,
            "socket_errors": {k: v for k, v in run["errors"].items() if k != "status" and v},
            "server_cpu_ms_per_req": round(server_cpu * 1000 / max(run["requests"], 1), 4),
            "events_produced": produced, "events_expected": ok if var.tracked else 0,
        }  # fmt: skip

    def run(self) -> dict[str, list[dict[str, Any]]]:
        args = self.args
        servers = ", ".join(f"{name} {server.url}" for name, server in self.servers.items())
        load = f"wrk -t2 -c{args.connections} -d{args.duration:g}s, {args.rounds} rounds"
        print(f"stack: {self.stack}; {servers}; {load}; {self.cpus}", flush=True)
        # Tracked traffic first, so the broker has compiled its hot paths; then every variant.
        tracked, left = [var for var in VARIANTS if var.tracked], args.broker_warmup
        while left > 0:
            self.wrk(tracked[int(left / 15) % len(tracked)], min(15.0, left), check=True)
            left -= 15.0
        for var in VARIANTS:
            self.wrk(var, args.warmup, check=True)
        runs: dict[str, list[dict[str, Any]]] = {var.key: [] for var in VARIANTS}
        for number in range(args.rounds):
            for var in VARIANTS if number % 2 == 0 else VARIANTS[::-1]:
                runs[var.key].append(r := self.measure(var))
                print(f"round {number + 1} {var.key:<10} {r['rps']:7.0f} req/s, p50 {r['p50_ms']:.1f} ms, p99 "
                      f"{r['p99_ms']:.1f} ms, CPU {r['server_cpu_ms_per_req']:.3f} ms/req", flush=True)  # fmt: skip
        return runs


def kafka_check(produced: int, expected: int, tracked: bool, slack: int) -> str:
    """Whether the events on Kafka match wrk's 2xx: wrk stops counting with up to one request per connection
    still served, so a tracked variant may show up to ``slack`` events more."""
    diff = produced - expected
    if not tracked:
        return "ok" if diff == 0 else f"{diff:+d} unexpected (another producer on the topic?)"
    if diff < 0:
        return f"{-diff} missing (dropped, spooled or lost)"
    return "ok" if diff == 0 else ("ok, in flight at the deadline" if diff <= slack else f"{diff:+d} unexplained")


def _median(runs: Sequence[Mapping], key: str) -> float:
    return round(statistics.median(r[key] for r in runs), 4)


def ratio(top: Mapping, bottom: Mapping, of: str, goal: float | None) -> dict[str, Any]:
    """``top``'s req/s over ``bottom``'s: ``value`` is the median of the per-round ratios (the two
    ran next to each other, so a VM that changes speed between rounds moves both);
    ``of_medians`` pairs numbers from different rounds; ``pass`` is ``None`` for a control.
    ``server_cpu_ratio``: the inverse ratio of server CPU per request, what the ratio would be
    if the server had the machine to itself (B's includes its tracker thread)."""
    per_round = [x["rps"] / y["rps"] for x, y in zip(top["runs"], bottom["runs"], strict=True)]
    value, cpu_t, cpu_b = (statistics.median(per_round), *(v["median_server_cpu_ms_per_req"] for v in (top, bottom)))
    of_medians = top["median_rps"] / bottom["median_rps"]
    return {"of": of, "value": round(value, 4), "of_medians": round(of_medians, 4), "goal": goal,
            "pass": None if goal is None else value >= goal, "per_round": [round(r, 4) for r in per_round],
            "server_cpu_ratio": round(cpu_b / cpu_t, 4) if cpu_t and cpu_b else None}  # fmt: skip


def verdict(measured: Sequence[Mapping], control: Mapping | None) -> str:
    """PASS when every ratio meets its goal, FAIL when none does, UNRESOLVED when they disagree or when
    ``control`` (an A/A ratio) is off 1.00 by more than the margin."""
    if control is not None and abs(control["value"] - 1.0) > min(1.0 - r["goal"] for r in measured):
        return "UNRESOLVED"
    passes = {r["pass"] for r in measured}
    return "UNRESOLVED" if len(passes) > 1 else "PASS" if passes == {True} else "FAIL"


def build(config: dict, runs: Mapping[str, list[dict]], connections: int) -> dict[str, Any]:
    """The result document: per variant medians and the Kafka check, the ratios, the verdicts."""
    variants = {}
    for key, rs in runs.items():
        produced, expected = sum(r["events_produced"] for r in rs), sum(r["events_expected"] for r in rs)
        variants[key] = {
            "median_rps": _median(rs, "rps"), "median_p50_ms": _median(rs, "p50_ms"),
            "median_p99_ms": _median(rs, "p99_ms"), "non_2xx": sum(r["non_2xx"] for r in rs),
            "median_server_cpu_ms_per_req": _median(rs, "server_cpu_ms_per_req"),
            "socket_errors": sum(sum(r["socket_errors"].values()) for r in rs), "events_produced": produced,
            "events_expected": expected, "runs": rs,
            "kafka_check": kafka_check(produced, expected, expected > 0, connections * len(rs)),
        }  # fmt: skip
    ratios = {name: ratio(variants[t], variants[b], f"{t} / {b}", goal) for name, (t, b, goal) in RATIOS.items()}
    verdicts = {goal: verdict([ratios[n] for n in names], control and ratios[control])
                for goal, (names, control) in VERDICTS.items()}  # fmt: skip
    warnings = [f"{k}: events on Kafka {v['kafka_check']}" for k, v in variants.items()
                if not v["kafka_check"].startswith("ok")]  # fmt: skip
    failures = [f"{k}: {v['non_2xx']} non-2xx answers" for k, v in variants.items() if v["non_2xx"]]
    failures += [f"{k}: {v['socket_errors']} socket errors" for k, v in variants.items() if v["socket_errors"]]
    return {"benchmark": "collector", "config": config, "variants": variants, "ratios": ratios,
            "verdicts": verdicts, "warnings": warnings, "failures": failures,
            "ok": not failures}  # fmt: skip


def print_table(doc: Mapping) -> None:
    print(f"\n{'variant':<10} {'req/s':>6}  {'per round':<18} {'p50 ms':>6} {'p99 ms':>6} {'non-2xx':>7} "
          f"{'CPU ms/req':>10}  events on Kafka / 2xx tracked")  # fmt: skip
    for key, v in doc["variants"].items():
        rounds = " ".join(f"{r['rps']:.0f}" for r in v["runs"])
        print(f"{key:<10} {v['median_rps']:6.0f}  {rounds:<18} {v['median_p50_ms']:6.1f} {v['median_p99_ms']:6.1f} "
              f"{v['non_2xx']:7d} {v['median_server_cpu_ms_per_req']:10.3f}  {v['events_produced']} / "
              f"{v['events_expected']}: {v['kafka_check']}")  # fmt: skip
    print(f"\n{'ratio':<13} {'of req/s':<22} {'median':>6} {'goal':>5}  result  {'per round':<32} "
          "of medians  CPU ratio")  # fmt: skip
    for name, r in doc["ratios"].items():
        rounds = " ".join(f"{v:.3f}" for v in r["per_round"])
        cpu = "-" if r["server_cpu_ratio"] is None else f"{r['server_cpu_ratio']:.3f}"
        goal = "-" if r["goal"] is None else f"{r['goal']:.2f}"
        result = "A/A" if r["pass"] is None else "PASS" if r["pass"] else "FAIL"
        print(f"{name:<13} {r['of']:<22} {r['value']:6.3f} {goal:>5}  {result:<6}  {rounds:<32} "
              f"{r['of_medians']:10.3f}  {cpu}")  # fmt: skip
    print("", *(f"goal {name}: {outcome}" for name, outcome in doc["verdicts"].items()), sep="\n")
    for warning in doc["warnings"]:
        print(f"\nWARNING: {warning}")
    print(f"\nbenchmark FAILED: {'; '.join(doc['failures'])}" if doc["failures"] else "\nbenchmark completed")


CHILD_FLAG = "--in-callgrind"
# The threads a page view costs; the others (librdkafka's, the sink's, the waiter's) follow the clock.
COUNTED = ("request", "footfall-tracker")
VALGRIND_THREAD = re.compile(r"^Thread (\d+): status = .*\(lwpid (\d+)\)$", re.M)
WSGIApp = Callable[[dict[str, Any], Callable[..., object]], Iterable[bytes]]
AGENTS = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.6 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
)
REFERRERS = ("https://www.google.com/", "", "https://x.com/")
CLIENTS = ("81.2.69.142", "89.160.20.112", "216.160.83.56", "2a02:cf40::1")


class Dump(NamedTuple):
    """One callgrind dump file: the phase it closes, the thread, its instruction count."""

    label: str
    thread: int
    instructions: int


def read_dump(path: Path) -> Dump | None:
    """Label, thread and Ir of a callgrind dump file; ``None`` for valgrind's own at exit."""
    label = thread = total = None
    for line in path.read_text().splitlines():
        if line.startswith("desc: Trigger: dump "):
            label = line.removeprefix("desc: Trigger: dump ").strip()
        elif line.startswith("thread: "):
            thread = int(line.split()[1])
        elif line.startswith(("summary: ", "totals: ")):
            total = int(line.split()[1])  # the last one wins: summary follows totals
    return None if label is None or thread is None else Dump(label, thread, total or 0)


def per_variant(dumps: list[Dump], requests: int) -> dict[str, dict[int, float]]:
    """{variant: {thread: median Ir per page view}} from dumps labelled ``<variant>.<round>`` (others left out)."""
    phases: dict[str, dict[int, int]] = {}
    for dump in dumps:
        phases.setdefault(dump.label, {})[dump.thread] = dump.instructions
    threads, rounds = sorted({dump.thread for dump in dumps}), dict[str, list[dict[int, int]]]()
    for label, counts in phases.items():
        variant, _, number = label.rpartition(".")
        if variant and number.isdigit():
            rounds.setdefault(variant, []).append(counts)
    return {v: {t: statistics.median(r.get(t, 0) for r in rs) / requests for t in threads} for v, rs in rounds.items()}


def summarise(results: dict[str, dict[int, float]], names: Mapping[int, str]) -> dict[str, dict[str, float]]:
    """Per variant: Ir per page view of each COUNTED thread (``names``: by valgrind's numbers), their ``total``,
    and the other threads' in one ``clocked`` sum (left out of the total)."""
    rows = {}
    for variant, counts in results.items():
        row = {name: sum(x for t, x in counts.items() if names.get(t) == name) for name in COUNTED}
        clocked = sum(x for t, x in counts.items() if names.get(t) not in COUNTED)
        rows[variant] = row | {"total": sum(row.values()), "clocked": clocked}
    return rows


def report(rows: Mapping[str, Mapping[str, float]]) -> list[str]:
    """A row per variant: its total's difference from the first's and the first's over it (a req/s ceiling)."""
    first = next(iter(rows))
    base = rows[first]["total"]
    heads = (*COUNTED, "total", "(clocked)", f"vs {first}", "ceiling")
    lines = ["variant" + "".join(f"{h:>18}" for h in heads) + "   (Ir per page view)"]
    for variant, row in rows.items():
        cells = "".join(f"{row[k]:>18,.0f}" for k in (*COUNTED, "total", "clocked"))
        lines.append(f"{variant:<7}{cells}{row['total'] - base:>+18,.0f}{base / row['total']:>18.3f}")
    return lines


def serve(app: WSGIApp, requests: int) -> None:
    """``requests`` page views to ``app`` as a WSGI server sends them; raise if one is not a 200."""

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: object = None) -> None:
        if not status.startswith("200"):
            raise RuntimeError(f"/bench/page answered {status}")

    for i in range(requests):
        body = app({
            "REQUEST_METHOD": "GET", "PATH_INFO": "/bench/page", "QUERY_STRING": "", "SERVER_NAME": "localhost",
            "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1", "HTTP_HOST": "localhost", "REMOTE_ADDR": "127.0.0.1",
            "HTTP_USER_AGENT": AGENTS[i % len(AGENTS)], "HTTP_REFERER": REFERRERS[i % len(REFERRERS)],
            "HTTP_X_FORWARDED_FOR": CLIENTS[i % len(CLIENTS)], "HTTP_X_FORWARDED_PROTO": "https",
            "wsgi.input": io.BytesIO(b""), "wsgi.url_scheme": "http", "wsgi.errors": sys.stderr,
        }, start_response)  # fmt: skip
        b"".join(body)
        getattr(body, "close", lambda: None)()


def child(requests: int, rounds: int, out: Path) -> None:
    """Inside callgrind: phases closed by dumps, B's once its events are on Kafka; COUNTED threads' names
    by valgrind's numbers to ``out/threads.json``."""
    os.environ.update(DJANGO_SETTINGS_MODULE="bench.settings_bench", FOOTFALL_BENCH_MIDDLEWARE="1",
                      FOOTFALL_TRUSTED_PROXIES="1", ALLOWED_HOSTS="localhost")  # fmt: skip
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{tempfile.mkdtemp(prefix='ff-callgrind-')}/db.sqlite3")
    import django

    django.setup()
    from django.conf import settings
    from django.core.handlers.wsgi import WSGIHandler

    b = WSGIHandler()  # reads settings.MIDDLEWARE now, as footfall_server.wsgi builds it
    settings.MIDDLEWARE = [m for m in settings.MIDDLEWARE if not m.endswith("ClickstreamMiddleware")]
    a, marks = WSGIHandler(), Watermarks(os.environ)
    targets, delivered = queue.SimpleQueue[int](), threading.Event()

    def wait() -> None:  # for each target, wait (by the clock) until the topic holds that many events
        while True:
            target, deadline = targets.get(), time.monotonic() + 120
            while marks.total() < target and time.monotonic() < deadline:
                time.sleep(0.5)
            delivered.set()  # on time or not: a late phase shows in the tracker's column

    # One waiter for the whole run, off the request thread (clocked: out of the totals).
    threading.Thread(target=wait, name="bench-wait", daemon=True).start()
    expected = marks.total()

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
    # valgrind's numbers of the counted threads, by kernel id (an ended thread's number is reused).
    vgdb = ["vgdb", f"--pid={os.getpid()}", "v.info", "scheduler"]
    listing = subprocess.run(vgdb, capture_output=True, text=True, check=True)
    named = {t.native_id: t.name for t in threading.enumerate()} | {threading.get_native_id(): "request"}
    found = VALGRIND_THREAD.findall(listing.stdout + listing.stderr)
    threads = {n: named[int(lwp)] for n, lwp in found if named.get(int(lwp)) in COUNTED}
    (out / "threads.json").write_text(json.dumps(threads))


def instructions(requests: int, rounds: int, env: dict[str, str], workdir: Path) -> dict[str, Any]:
    """Run the child under callgrind; print the table; the result document."""
    argv = [harness.tool("valgrind"), "--tool=callgrind", "--separate-threads=yes", "--dump-line=no",
            f"--callgrind-out-file={workdir}/callgrind.%p", PYTHON, "-m", "bench.collector_bench",
            CHILD_FLAG, str(workdir), "--requests", str(requests), "-r", str(rounds)]  # fmt: skip
    print(f"running under callgrind ({rounds} rounds of {requests} page views per variant)", flush=True)
    started = time.monotonic()
    done = subprocess.run(argv, env={**env, "PYTHONHASHSEED": "0"}, cwd=REPO, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise BenchError(f"the callgrind run failed ({done.returncode}):\n{done.stderr[-3000:]}")
    measured = per_variant([d for p in workdir.glob("callgrind.*.*-*") if (d := read_dump(p))], requests)
    names = {int(k): v for k, v in json.loads((workdir / "threads.json").read_text()).items()}
    rows = summarise({v: measured[v] for v in ("A", "B")}, names)
    print(*report(rows), f"({time.monotonic() - started:.0f} s under callgrind)", sep="\n")
    return {"benchmark": "collector_instructions", "requests": requests, "rounds": rounds, "threads": names,
            "ir_per_page_view": {v: {k: round(x) for k, x in row.items()} for v, row in rows.items()},
            "b_minus_a": round(rows["B"]["total"] - rows["A"]["total"]),
            "ceiling": round(rows["A"]["total"] / rows["B"]["total"], 4)}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="python -m bench.collector_bench", description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("-c", "--connections", type=int, default=32, help="wrk connections (default 32)")
    add("-d", "--duration", type=float, default=10, help="seconds per measured run (default 10)")
    add("-w", "--warmup", type=float, default=5, help="seconds of warm-up per variant (default 5)")
    add("--broker-warmup", type=float, default=30, help="seconds of tracked traffic first (default 30)")
    add("-r", "--rounds", type=int, default=None, help="rounds over all variants (default 3; 2 with --instructions)")
    add("--stack", choices=("auto", "env", "own"), default="auto", help="see above")
    add("--cpus", choices=("auto", "none"), default="auto", help="servers on CPUs apart from wrk and the stack")
    add("--instructions", action="store_true", help="count instructions per page view under callgrind instead")
    add("--requests", type=int, default=300, help="--instructions: page views per phase (default 300)")
    add("--json", type=Path, default=None, help="where to write the results")
    if argv and argv[0] == CHILD_FLAG:  # under callgrind
        args = parser.parse_args(argv[2:])
        child(args.requests, args.rounds, Path(argv[1]))
        sys.stdout.flush()
        os._exit(0)  # no interpreter teardown: valgrind's exit dump is not read anyway
    args = parser.parse_args(argv)
    args.rounds = args.rounds or (2 if args.instructions else 3)
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")

    def run(cleanup: contextlib.ExitStack) -> dict[str, Any]:
        workdir = Path(tempfile.mkdtemp(prefix="footfall-bench-"))
        cleanup.callback(shutil.rmtree, workdir, True)
        if args.instructions:
            env, _ = harness.use_stack(args.stack, workdir, cleanup, ("redis", "kafka"))
            return instructions(args.requests, args.rounds, env, workdir)
        harness.tool("wrk")  # fail before starting anything
        bench = Bench(args, workdir, cleanup)
        runs = bench.run()
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
        config = {
            "wrk": f"-t2 -c{args.connections} -d{args.duration:g}s (warm-up {args.warmup:g}s)",
            "broker_warmup_s": args.broker_warmup, "rounds": args.rounds,
            "gunicorn": " ".join(bench.servers["A"].args), "stack": bench.stack, "cpu_split": bench.cpus,
            "machine": harness.machine(), "commit": commit.stdout.strip(), "started": started,
        }  # fmt: skip
        return build(config, runs, args.connections)

    out = args.json or OUT / ("collector_instructions.json" if args.instructions else "collector.json")
    return harness.run_main(run, (lambda doc: None) if args.instructions else print_table, out)


if __name__ == "__main__":
    sys.exit(main())
