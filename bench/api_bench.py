"""Query API load benchmark: latency per endpoint under concurrent clients, next to the raw store query
time of the same work in the same run, on the stack the environment names. Goals: p95 <= 100 ms (realtime),
<= 300 ms (history), <= 3 x raw p95. With --alert-checks, a Celery worker runs the alert checks in alternating
phases of the same load: each endpoint's p95 with and without them, and the checks' wall and CPU time per run.
Usage and figures: bench/README.md."""

from __future__ import annotations

import argparse
import ast
import contextlib
import datetime as dt
import itertools
import json
import math
import os
import random
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import celery
import redis
import urllib3

from bench import harness
from bench.api_data import ALERT_RULE_DEFS, FUNNEL_DEF, GOAL_DEFS, SEED, TZ, Definitions, seed
from bench.harness import (
    OUT,
    PYTHON,
    REPO,
    BenchError,
    Server,
    cpu_seconds,
    group_seconds,
    machine,
    manage,
    unlink_matching,
)
from footfall.config import load_config
from footfall.goals import FunnelSpec, GoalSpec
from footfall.vocabulary import BREAKDOWN_METRICS, CUSTOM_EVENT_DIMENSIONS, INTERVALS, METRICS
from historical.store import ROLLUP_COLLECTIONS, RUNS, connect
from query import params as p
from query.conversions import Conversions
from query.service import QueryService, QuerySite
from realtime.keys import PREFIX, KeyLayout
from realtime.reads import RealtimeQueries
from realtime.store import CounterStore

GOALS = {"realtime_p95_ms": 100.0, "history_p95_ms": 300.0, "ratio": 3.0}
TIMEOUT, RAW_BUDGET_S = 120, 60.0


Call = Callable[[QueryService, QuerySite, dict[str, str], Definitions], object]


def _range(svc: QueryService, site: QuerySite, q: dict[str, str]) -> p.Range:
    return p.parse_range(q, site.tz, svc.now(), p.DEFAULT_SPAN["day"], p.MAX_RANGE)


def _timeseries(svc: QueryService, site: QuerySite, q: dict[str, str], _: Definitions) -> object:
    metric, interval = p.choice(q, "metric", METRICS, "pageviews"), p.choice(q, "interval", INTERVALS, "day")
    rng = p.parse_range(q, site.tz, svc.now(), p.DEFAULT_SPAN[interval], p.MAX_SPAN[interval])
    return svc.timeseries(site, metric, interval, rng, p.parse_filters(q.get("filters")))


def _breakdown(dimension: str) -> Call:
    def call(svc: QueryService, site: QuerySite, q: dict[str, str], _: Definitions) -> object:
        q = dict(q)
        ref = p.text_value(q.pop("_ref"), "ref_domain") if "_ref" in q else None
        limit, page = p.bounded_int(q, "limit", 10, 1, p.MAX_LIMIT), p.bounded_int(q, "page", 1, 1, 100_000)
        dim = "refpage" if dimension == "refpage" else p.dimension(dimension)
        default = ("events", "visitors") if dim in CUSTOM_EVENT_DIMENSIONS else ("pageviews", "visitors")
        metrics = p.parse_metrics(q.get("metrics"), BREAKDOWN_METRICS, default)
        if ref is None:
            return svc.breakdown(site, dim, _range(svc, site, q), limit, page, metrics)
        return svc.breakdown(site, "refpage", _range(svc, site, q), limit, page, metrics, ref=ref)

    return call


def _realtime(svc: QueryService, site: QuerySite, q: dict[str, str], _: Definitions) -> object:
    return svc.realtime(site, p.bounded_int(q, "minutes", 30, 1, 180), p.bounded_int(q, "limit", 10, 1, 100))


def _aggregate(svc: QueryService, site: QuerySite, q: dict[str, str], _: Definitions) -> object:
    compare = p.choice(q, "compare", ("previous_period", "none"), "none") == "previous_period"
    return svc.aggregate(site, _range(svc, site, q), compare)


def _goals(svc: QueryService, site: QuerySite, q: dict[str, str], defs: Definitions) -> object:
    return Conversions(svc).goals(site, _range(svc, site, q), defs.goals)


def _event_properties(event: str, prop: str) -> Call:
    def call(svc: QueryService, site: QuerySite, q: dict[str, str], _: Definitions) -> object:
        limit, page = p.bounded_int(q, "limit", 10, 1, p.MAX_LIMIT), p.bounded_int(q, "page", 1, 1, 100_000)
        return Conversions(svc).event_properties(site, event, prop, _range(svc, site, q), limit, page)

    return call


def _funnel(svc: QueryService, site: QuerySite, q: dict[str, str], defs: Definitions) -> object:
    return Conversions(svc).funnel(site, defs.funnel, _range(svc, site, q))


def _goal_breakdown(dimension: str) -> Call:
    """The breakdown of ``dimension`` filtered by the site's first goal, as ``BreakdownView`` answers ``goal``."""

    def call(svc: QueryService, site: QuerySite, q: dict[str, str], defs: Definitions) -> object:
        limit, page = p.bounded_int(q, "limit", 10, 1, p.MAX_LIMIT), p.bounded_int(q, "page", 1, 1, 100_000)
        dim = p.dimension(dimension)
        return Conversions(svc).goal_breakdown(site, dim, defs.goals[0], _range(svc, site, q), limit, page)

    return call


@dataclass(frozen=True)
class Endpoint:
    name: str
    kind: str  # "realtime" or "history": which latency goal applies
    weight: float  # share of the requests
    path: str  # under /api/v1/sites/<site>/; {ref}: each top referrer, {funnel}: the funnel's id
    query: Callable[[dt.date], dict[str, str]]  # today (site-local) -> query parameters
    call: Call
    by_goal: bool = False  # filtered by the first goal: the query's goal is its id


def _since(days: int, **extra: str) -> Callable[[dt.date], dict[str, str]]:
    """The last ``days`` site-local days, today included (``to`` left to default: now)."""
    return lambda today: {"from": (today - dt.timedelta(days=days - 1)).isoformat(), **extra}


def _settled(days: int) -> Callable[[dt.date], dict[str, str]]:
    """The ``days`` site-local days up to the day before yesterday: settled days only."""
    return lambda today: {"from": (today - dt.timedelta(days=days + 1)).isoformat(), "to": (today - dt.timedelta(
        days=1)).isoformat()}  # fmt: skip


# Dashboard polling dominates; history views now and then, 90-day ones least; {ref}: each top referrer in turn.
_DAYS = {"interval": "day", "metric": "visitors"}
_ENGAGEMENT = {"metrics": "pageviews,time_on_page,scroll_depth,engaged_time"}
_SIGNUP_PLANS = _event_properties("signup", "plan")
_REFS_BY_GOAL = _goal_breakdown("referrers")
MIX = [
    Endpoint("realtime 30m", "realtime", 40, "realtime", lambda _: {"minutes": "30"}, _realtime),
    Endpoint("timeseries day 7d", "history", 8, "timeseries", _since(7, **_DAYS), _timeseries),
    Endpoint("timeseries day 30d", "history", 8, "timeseries", _since(30, **_DAYS), _timeseries),
    Endpoint("timeseries day 90d", "history", 6, "timeseries", _since(90, **_DAYS), _timeseries),
    Endpoint("timeseries hour 2d", "history", 8, "timeseries", lambda _: {"interval": "hour"}, _timeseries),
    Endpoint("breakdown pages 7d", "history", 5, "breakdown/pages", _since(7), _breakdown("pages")),
    Endpoint("breakdown pages 30d", "history", 5, "breakdown/pages", _since(30), _breakdown("pages")),
    Endpoint("breakdown pages 90d", "history", 4, "breakdown/pages", _since(90), _breakdown("pages")),
    Endpoint("breakdown referrers 7d", "history", 4, "breakdown/referrers", _since(7), _breakdown("referrers")),
    Endpoint("breakdown referrers 30d", "history", 3, "breakdown/referrers", _since(30), _breakdown("referrers")),
    Endpoint("breakdown referrers 90d", "history", 3, "breakdown/referrers", _since(90), _breakdown("referrers")),
    Endpoint("referrer pages 30d", "history", 3, "referrers/{ref}/pages", _since(30), _breakdown("refpage")),
    Endpoint("aggregate 30d +compare", "history", 3, "aggregate", _since(30, compare="previous_period"), _aggregate),
    # Issue 31: goals, custom events, their properties, engagement, funnels.
    Endpoint("goals 30d settled", "history", 3, "goals", _settled(30), _goals),
    Endpoint("goals 7d", "history", 3, "goals", _since(7), _goals),
    Endpoint("breakdown events 30d", "history", 3, "breakdown/events", _since(30), _breakdown("events")),
    Endpoint("signup plans 30d", "history", 3, "events/signup/properties/plan", _since(30), _SIGNUP_PLANS),
    Endpoint("pages engagement 30d", "history", 3, "breakdown/pages", _since(30, **_ENGAGEMENT), _breakdown("pages")),
    Endpoint("funnel 30d settled", "history", 3, "funnels/{funnel}", _settled(30), _funnel),
    Endpoint("referrers by goal 30d", "history", 3, "breakdown/referrers", _since(30), _REFS_BY_GOAL, by_goal=True),
]


def summary(values_s: list[float]) -> dict[str, Any]:
    """Count, nearest-rank percentiles, max and mean, in ms."""
    ms = sorted(v * 1000 for v in values_s)
    pct = {f"p{q}_ms": ms[max(0, math.ceil(q / 100 * len(ms)) - 1)] if ms else None for q in (50, 95, 99)}
    return {"n": len(ms), **pct, "max_ms": ms[-1] if ms else None, "mean_ms": sum(ms) / len(ms) if ms else None}


def raw_round(svc: QueryService, site: QuerySite, defs: Definitions, plans: list[tuple[Endpoint, list[dict[str, str]]]],
              reps: int, out: dict[str, list[float]], budget_s: float = math.inf) -> None:  # fmt: skip
    """``reps`` calls of every endpoint, interleaved (drift on a shared machine hits all alike); an
    endpoint stops early once its calls of this round took ``budget_s`` (after 3 calls at least)."""
    spent: dict[str, float] = {}
    for rep in range(reps):
        for endpoint, queries in plans:
            if rep < 3 or spent.get(endpoint.name, 0.0) < budget_s:
                start = time.perf_counter()
                endpoint.call(svc, site, queries[rep % len(queries)], defs)
                out.setdefault(endpoint.name, []).append(elapsed := time.perf_counter() - start)
                spent[endpoint.name] = spent.get(endpoint.name, 0.0) + elapsed


SET_UP_SITE = """
import json
from footfall.models import ApiKey, Funnel, Goal, Site
site = Site.objects.get(site_id={site!r})
for i in range({n}):
    print("KEY", ApiKey.issue(site, f"api-bench-{{i}}", ["read"])[1])
goals = []
for name, kind, path, event, prop, value in {goals!r}:
    goal = Goal(site=site, name=name, kind=kind, path=path, event=event, prop=prop, value=value)
    goal.full_clean()
    goal.save()
    goals.append(goal)
funnel = Funnel.create(site, {funnel[0]!r}, [goals[i].pk for i in {funnel[1]!r}])
print("DEFS", json.dumps({{"goals": [g.spec().to_json() for g in goals], "funnel": funnel.spec().to_json()}}))
"""


SET_UP_ALERTS = """
from alerts.models import AlertRule, Channel
from footfall.models import Goal, Site
site = Site.objects.get(site_id={site!r})
channel = Channel(site=site, name="ops", kind="email", email="ops@bench.example")
channel.full_clean()
channel.save()
goals = {{goal.name: goal for goal in Goal.objects.filter(site=site)}}
for name, kind, threshold, window, scope, value, goal in {rules!r}:
    rule = AlertRule(site=site, name=name, kind=kind, threshold=threshold, window_minutes=window, scope=scope,
                     value=value, goal=goals[goal] if goal else None)
    rule.full_clean()
    rule.save()
    rule.channels.add(channel)
print("RULES", AlertRule.objects.filter(site=site, enabled=True).count())
"""
CHECK_TASK = "alerts.tasks.check_alerts"
# Celery's own line for a finished task (celery.app.trace): its runtime and return value, or the failure.
_TASK_DONE = re.compile(
    rf"Task {re.escape(CHECK_TASK)}\[(?P<id>[^\]]+)\] (?:succeeded in (?P<s>[0-9.e-]+)s: (?P<ret>.*)|raised .*)$"
)


@dataclass(frozen=True)
class CheckRun:
    """One run of the checks: the task's runtime as Celery logged it, the worker's CPU meanwhile."""

    started: float  # monotonic, when the task was sent
    wall_ms: float  # Celery's "succeeded in" runtime of the task
    latency_ms: float  # sent to seen done in the worker's log (queueing and log polling included)
    cpu_ms: float  # CPU of the worker's process group from send to done (/proc)
    outcome: dict[str, int]  # the task's return: rules per action (quiet, unknown, opened, ...)


class CheckWorker:
    """A Celery worker of the product (``footfall_server.celery_app``, the production command) on the stack's
    broker, in its own session; :meth:`check` sends ``alerts.tasks.check_alerts`` as beat would and waits for it in
    the log."""

    def __init__(self, env: dict[str, str], broker_url: str, log_file: Path) -> None:
        self.env, self.log_file = env, log_file
        self.argv = [PYTHON, "-m", "celery", "-A", "footfall_server.celery_app", "worker", "--loglevel", "INFO",
                     "--hostname", f"api-bench-{secrets.token_hex(3)}@%h"]  # fmt: skip
        self.app = celery.Celery("api-bench", broker=broker_url, set_as_current=False)
        self.proc: subprocess.Popen[bytes] | None = None
        self._offset = 0

    def start(self) -> None:
        with self.log_file.open("ab") as log:
            self.proc = subprocess.Popen(self.argv, env=self.env, cwd=REPO, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip

    def cpu_s(self) -> float:
        """CPU seconds of the worker's live processes (main and pool children)."""
        return group_seconds(self.proc.pid) if self.proc else 0.0

    def check(self, timeout_s: float = TIMEOUT) -> CheckRun:
        """Send one check run and wait until the worker logs it done; BenchError if it failed or never ended."""
        task_id, cpu0, start = f"api-bench-{secrets.token_hex(8)}", self.cpu_s(), time.monotonic()
        self.app.send_task(CHECK_TASK, task_id=task_id)
        while time.monotonic() - start < timeout_s:
            if self.proc is None or self.proc.poll() is not None:
                raise BenchError(f"the Celery worker exited; log: {self.log_file}")
            with self.log_file.open("rb") as log:
                log.seek(self._offset)
                chunk = log.read()
            complete = chunk[: chunk.rfind(b"\n") + 1]  # whole lines only: the rest is read next time
            self._offset += len(complete)
            for line in complete.decode(errors="replace").splitlines():
                if (m := _TASK_DONE.search(line)) and m["id"] == task_id:
                    if m["s"] is None:
                        raise BenchError(f"{CHECK_TASK} failed: {line}; log: {self.log_file}")
                    latency, cpu = time.monotonic() - start, self.cpu_s() - cpu0
                    outcome = ast.literal_eval(m["ret"])
                    return CheckRun(start, float(m["s"]) * 1000, latency * 1000, cpu * 1000, outcome)
            time.sleep(0.02)
        raise BenchError(f"{CHECK_TASK} did not finish within {timeout_s:.0f}s; log: {self.log_file}")

    def stop(self) -> None:
        """Warm shutdown (SIGTERM to the group: the pool finishes its task), then SIGKILL."""
        self.app.close()
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(30)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(5)
        self.proc = None


@dataclass(frozen=True)
class Segment:
    """A stretch of the measured load: ``phase`` is "load" (no checks asked for), "without" or "with" checks."""

    phase: str
    start: float  # monotonic
    end: float


def plan_segments(t_measure: float, duration: float, rounds: int, alert_checks: bool) -> list[Segment]:
    """The measured load as segments: one "load" segment, or with the checks ``rounds`` rounds of a "without" and a
    "with" segment, each ``duration / (2 * rounds)`` long, every other round reversed (without, with, with,
    without, ...) so that a load drifting over the run weighs on both phases alike."""
    if not alert_checks:
        return [Segment("load", t_measure, t_measure + duration)]
    phases: list[str] = []
    for r in range(rounds):
        phases += ["without", "with"] if r % 2 == 0 else ["with", "without"]
    step = duration / len(phases)
    return [Segment(phase, t_measure + i * step, t_measure + (i + 1) * step) for i, phase in enumerate(phases)]


def phase_at(segments: list[Segment], t: float) -> str | None:
    """The phase of monotonic time ``t``; None before the first segment (warm-up) or after the last."""
    return next((s.phase for s in segments if s.start <= t < s.end), None)


def stack_pids(env: dict[str, str]) -> dict[str, int]:
    """The pids of the stack's Redis, Mongo and Kafka as ``python -m deploy.local.stack status`` names them in
    ``env`` (none when the stack is not the local one): their CPU is what the checks' reads cost the stores."""
    out = subprocess.run([PYTHON, "-m", "deploy.local.stack", "status"], env=env, cwd=REPO, capture_output=True,
                         text=True, check=False).stdout  # fmt: skip
    return {m[1]: int(m[2]) for m in re.finditer(r"^(redis|mongo|kafka)\s+\S+\s+pid (\d+)", out, re.MULTILINE)}


def drive_checks(worker: CheckWorker | None, server: Server, segments: list[Segment], every_s: float,
                 runs: list[CheckRun], marks: list[dict[str, Any]], stores: dict[str, int]) -> None:  # fmt: skip
    """Through the segments: at each boundary record the CPU of the server, the worker and the ``stores`` (pids by
    name) and the load average in ``marks``; in "with" segments run the checks every ``every_s`` (a tick that falls
    while a run is still going is skipped, as beat's ``expires`` drops a run that could not start in time) and add
    them to ``runs``."""
    for seg in segments:
        time.sleep(max(0.0, seg.start - time.monotonic()))
        marks.append({"phase": seg.phase, "at": seg.start, "server_cpu_s": server.cpu_s(),
                      "worker_cpu_s": worker.cpu_s() if worker else 0.0, "loadavg": os.getloadavg()[0],
                      "stores_cpu_s": sum(map(cpu_seconds, stores.values()))})  # fmt: skip
        due = seg.start
        while seg.phase == "with" and worker is not None and (now := time.monotonic()) < seg.end:
            if now >= due:
                runs.append(worker.check())
                due += every_s * max(1, math.ceil((time.monotonic() - due) / every_s))
            time.sleep(max(0.0, min(due, seg.end) - time.monotonic()))
    time.sleep(max(0.0, segments[-1].end - time.monotonic()))
    marks.append({"phase": "end", "at": segments[-1].end, "server_cpu_s": server.cpu_s(),
                  "worker_cpu_s": worker.cpu_s() if worker else 0.0, "loadavg": os.getloadavg()[0],
                  "stores_cpu_s": sum(map(cpu_seconds, stores.values()))})  # fmt: skip


Sample = tuple[str, float, int, str]  # endpoint name, seconds, HTTP status (0: no answer), phase


def client_loop(port: int, key: str, urls: dict[str, list[str]], rng: random.Random, think_s: float,
                segments: list[Segment], samples: list[Sample], errors: list[str]) -> None:  # fmt: skip
    """One client: pick an endpoint by weight, GET one of its URLs, think; record what was started
    in a segment, with its phase (list appends are atomic)."""
    pool = urllib3.HTTPConnectionPool("127.0.0.1", port, maxsize=1, block=True, retries=False, timeout=TIMEOUT)
    headers = {"Authorization": f"Bearer {key}", "X-Forwarded-Proto": "https", "Accept": "application/json"}
    weights, t_end = [e.weight for e in MIX], segments[-1].end
    with contextlib.closing(pool):
        while (now := time.monotonic()) < t_end:
            name = rng.choices(MIX, weights=weights)[0].name
            start = time.perf_counter()
            try:
                resp = pool.request("GET", rng.choice(urls[name]), headers=headers, preload_content=True)
                status = resp.status
            except urllib3.exceptions.HTTPError as exc:
                status = 0
                errors.append(f"{name}: {exc}")
            if (phase := phase_at(segments, now)) is not None:
                samples.append((name, time.perf_counter() - start, status, phase))
                if status not in (0, 200) and len(errors) < 20:
                    errors.append(f"{name}: HTTP {status} {resp.data[:200]!r}")
            if think_s:
                time.sleep(min(rng.expovariate(1 / think_s), max(0.0, t_end - time.monotonic())))


def run(args: argparse.Namespace, cleanup: contextlib.ExitStack) -> dict[str, Any]:
    env = dict(os.environ)
    if not env.get("MONGO_URL") or not env.get("REDIS_URL"):
        raise BenchError('no stack in the environment: eval "$(python -m deploy.local.stack env)" first')
    cfg = load_config(env, REPO)
    mongo, db = connect(cfg.mongo_url, cfg.mongo_db)
    cleanup.callback(mongo.close)
    rclient = redis.Redis.from_url(cfg.redis_url, socket_timeout=30, health_check_interval=30)
    store = CounterStore(rclient, KeyLayout(retention_s=cfg.realtime_retention_s))
    now = dt.datetime.now(dt.UTC)
    today = now.astimezone(ZoneInfo(TZ)).date()
    days = [today - dt.timedelta(days=i) for i in range(args.days + 1, 1, -1)]  # up to the day before yesterday
    site = f"apibench-{secrets.token_hex(3)}"

    @cleanup.callback
    def delete_site() -> None:
        print(f"removing {site}'s documents and keys", flush=True)
        for name in (*ROLLUP_COLLECTIONS, RUNS):
            db[name].delete_many({"site_id": site})
        unlink_matching(rclient, f"{PREFIX}:{site}:*", f"{PREFIX}:seen:{site}:*")

    # The site, its API keys, goals and funnel first: the settled documents name the goals' and funnel's ids.
    workdir = Path(cleanup.enter_context(tempfile.TemporaryDirectory(prefix="ff-apibench-")))
    # Mail to files in the workdir: the checks' email channel sends nothing out of the machine.
    server_env = harness.server_env(env, workdir, "footfall_server.settings", FOOTFALL_API_RATE_PER_MINUTE="1000000",
                                    EMAIL_URL=f"file://{workdir / 'mail'}")  # fmt: skip
    manage(server_env, "migrate", "--noinput", "-v", "0")
    manage(server_env, "create_site", site, "--domain", "bench.example", "--timezone", TZ)
    script = SET_UP_SITE.format(site=site, n=args.clients, goals=GOAL_DEFS, funnel=FUNNEL_DEF)
    out = manage(server_env, "shell", "-c", script)
    if len(keys := [line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("KEY ")]) != args.clients:
        raise BenchError(f"expected {args.clients} API keys, got {len(keys)}:\n{out}")
    made = json.loads(next(line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("DEFS ")))
    defs = Definitions(tuple(map(GoalSpec.from_json, made["goals"])), FunnelSpec.from_json(made["funnel"]))
    if args.alert_checks:
        out = manage(server_env, "shell", "-c", SET_UP_ALERTS.format(site=site, rules=ALERT_RULE_DEFS))
        if f"RULES {len(ALERT_RULE_DEFS)}" not in out.splitlines():
            raise BenchError(f"expected {len(ALERT_RULE_DEFS)} alert rules:\n{out}")
    seeding = seed(db, store, site, days, args.events, cfg.realtime_retention_s, defs)
    server = Server("api", server_env, workdir / "gunicorn.log", keep_alive=10, timeout=TIMEOUT)
    cleanup.callback(server.stop)
    pool = urllib3.HTTPConnectionPool("127.0.0.1", server.port, maxsize=1, retries=False, timeout=float(TIMEOUT))
    headers = {"Authorization": f"Bearer {keys[0]}", "X-Forwarded-Proto": "https"}
    print(f"starting gunicorn on {server.url}: {' '.join(server.args)}", flush=True)
    server.start(lambda: pool.request("GET", f"/api/v1/sites/{site}/realtime?minutes=1", headers=headers).status == 200)

    # Raw reads sum every trend block in Redis: no remembered baselines, as no settled cache.
    svc = QueryService(db, RealtimeQueries(store, baseline_memory_items=0), cfg.realtime_retention_s)
    info = QuerySite(site, TZ)
    top = svc.breakdown(info, "ref", _range(svc, info, {}), 11, 1, ("pageviews",))["results"]  # the last 30 days
    top_refs = [str(row["value"]) for row in top if row["value"] != "(direct)"][:10]  # type: ignore[index]
    urls, plans = {}, []
    for endpoint in MIX:
        base, refs = endpoint.query(today), top_refs if "{ref}" in endpoint.path else [None]
        base |= {"goal": defs.goals[0].goal_id} if endpoint.by_goal else {}
        path = endpoint.path.replace("{funnel}", defs.funnel.funnel_id)
        paths = [path.replace("{ref}", urllib.parse.quote(ref or "", safe="")) for ref in refs]
        urls[endpoint.name] = [f"/api/v1/sites/{site}/{path}?{urllib.parse.urlencode(base)}" for path in paths]
        plans.append((endpoint, [base if ref is None else {**base, "_ref": ref} for ref in refs]))
        if (status := pool.request("GET", urls[endpoint.name][0], headers=headers).status) != 200:
            raise BenchError(f"{endpoint.name}: GET {urls[endpoint.name][0]} answered {status}")
    pool.close()

    raw: dict[str, list[float]] = {}
    raw_round(svc, info, defs, plans, 1, {})  # warm-up (connections, caches); not recorded
    raw_round(svc, info, defs, plans, args.raw_reps // 2, raw, RAW_BUDGET_S / 2)
    worker, first_run, runs, marks = None, None, list[CheckRun](), list[dict[str, Any]]()
    if args.alert_checks:
        worker = CheckWorker(server_env, load_config(server_env, REPO).celery_broker_url, workdir / "celery.log")
        cleanup.callback(_keep_log, worker.log_file, args.out.with_name(args.out.stem + "_worker.log"))
        cleanup.callback(worker.stop)
        print(f"starting a Celery worker: {' '.join(worker.argv[1:])}", flush=True)
        worker.start()
        first_run = worker.check(timeout_s=TIMEOUT + 60)  # start-up, imports, connections: reported apart
        print(f"first check run: {first_run}", flush=True)
    measured_s = args.duration * (2 if args.alert_checks else 1)
    print(f"load: {args.clients} clients, think {args.think_ms:g} ms, {args.warmup:g}s warm-up + {measured_s:g}s"
          + (f" in {2 * args.alert_rounds} alternating phases, checks every {args.check_every:g}s in 'with' phases "
             "(beat runs them once a minute)" if args.alert_checks else ""), flush=True)  # fmt: skip
    cpu0, t0, samples, errors = server.cpu_s(), time.monotonic(), list[Sample](), list[str]()
    segments = plan_segments(t0 + args.warmup, measured_s, args.alert_rounds, args.alert_checks)
    threads = [threading.Thread(target=client_loop, daemon=True, args=(
        server.port, key, urls, random.Random(SEED * 1000 + i), args.think_ms / 1000, segments, samples, errors))
        for i, key in enumerate(keys)]  # fmt: skip
    for thread in threads:
        thread.start()
    stores = stack_pids(env) if args.alert_checks else {}
    drive_checks(worker, server, segments, args.check_every, runs, marks, stores)
    for thread in threads:
        thread.join(timeout=TIMEOUT + 30)
    server_cpu = server.cpu_s() - cpu0
    raw_round(svc, info, defs, plans, args.raw_reps - args.raw_reps // 2, raw, RAW_BUDGET_S / 2)

    rate = len(samples) / measured_s  # requests started in the measured time, also those answered after it
    phases = {seg.phase for seg in segments}
    by_phase = {phase: endpoint_rows([s for s in samples if s[3] == phase], raw, urls) for phase in phases}
    rows, statuses = by_phase["with" if args.alert_checks else "load"]
    doc = {
        "when": now.isoformat(timespec="seconds"), "machine": machine(),
        "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}, "goals": GOALS,
        "seeding": seeding, "settled_days": [days[0].isoformat(), days[-1].isoformat()], "today": today.isoformat(),
        "throughput_rps": round(rate, 1), "requests": len(samples), "measured_s": measured_s,
        "server_cpu_ms_per_request": round(server_cpu * 1000 / (rate * (args.warmup + measured_s)), 2)
        if rate else None,
        "errors": errors[:20], "non_200": {n: dict(s) for n, s in statuses.items() if set(s) - {200}},
        "endpoints": rows,
        "ok": not errors and all(set(s) <= {200} for _, st in by_phase.values() for s in st.values()),
    }  # fmt: skip
    if args.alert_checks:
        without, without_statuses = by_phase["without"]
        doc["non_200"] |= {f"{n} (without checks)": dict(s) for n, s in without_statuses.items() if set(s) - {200}}
        doc |= {
            "endpoints_without_checks": without,
            "phases": phase_totals(marks, samples),
            "alert_checks": checks_summary(runs, first_run, args.check_every, len(ALERT_RULE_DEFS)),
        }
    return doc


def _keep_log(src: Path, dest: Path) -> None:
    """Copy the worker's log out of the workdir (removed at the end) for a look after the run."""
    with contextlib.suppress(OSError):
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(src.read_bytes())


def endpoint_rows(samples: list[Sample], raw: dict[str, list[float]], urls: dict[str, list[str]]
                  ) -> tuple[list[dict[str, Any]], dict[str, Counter[int]]]:  # fmt: skip
    """Per endpoint of MIX: latency of ``samples`` (200s only) against ``raw`` and the goals; and the statuses seen."""
    statuses: dict[str, Counter[int]] = {endpoint.name: Counter() for endpoint in MIX}
    for name, _, status, _ in samples:
        statuses[name][status] += 1
    rows = []
    for endpoint in MIX:
        goal_ms = GOALS[f"{endpoint.kind}_p95_ms"]
        under = summary([elapsed for name, elapsed, status, _ in samples if name == endpoint.name and status == 200])
        raw_s = summary(raw.get(endpoint.name, []))
        ratio = under["p95_ms"] / raw_s["p95_ms"] if under["p95_ms"] and raw_s["p95_ms"] else None
        rows.append({
            "endpoint": endpoint.name, "kind": endpoint.kind, "urls": urls[endpoint.name],
            "statuses": {str(k): v for k, v in sorted(statuses[endpoint.name].items())},
            "load": under, "raw": raw_s, "ratio_p95": round(ratio, 2) if ratio else None,
            "goal_p95_ms": goal_ms, "p95_ok": under["p95_ms"] is not None and under["p95_ms"] <= goal_ms,
            "ratio_ok": ratio is not None and ratio <= GOALS["ratio"],
        })  # fmt: skip
    return rows, statuses


def phase_totals(marks: list[dict[str, Any]], samples: list[Sample]) -> dict[str, Any]:
    """Per phase, from the marks at segment boundaries: seconds, requests, server CPU per request, the worker's and
    the stores' CPU per second and the load average at the start of each of its segments."""
    out: dict[str, dict[str, Any]] = {}
    for mark, after in itertools.pairwise(marks):
        tot = out.setdefault(mark["phase"], {"seconds": 0.0, "server_cpu_s": 0.0, "worker_cpu_s": 0.0,
                                             "stores_cpu_s": 0.0, "loadavg": []})  # fmt: skip
        tot["seconds"] += after["at"] - mark["at"]
        tot["stores_cpu_s"] += after.get("stores_cpu_s", 0.0) - mark.get("stores_cpu_s", 0.0)
        tot["server_cpu_s"] += after["server_cpu_s"] - mark["server_cpu_s"]
        tot["worker_cpu_s"] += after["worker_cpu_s"] - mark["worker_cpu_s"]
        tot["loadavg"].append(round(mark["loadavg"], 2))
    for phase, tot in out.items():
        n = sum(1 for s in samples if s[3] == phase)
        tot |= {"requests": n, "server_cpu_ms_per_request": round(tot["server_cpu_s"] * 1000 / n, 2) if n else None,
                "worker_cpu_ms_per_s": round(tot["worker_cpu_s"] * 1000 / tot["seconds"], 2),
                "stores_cpu_ms_per_s": round(tot["stores_cpu_s"] * 1000 / tot["seconds"], 2)}  # fmt: skip
    return out


def checks_summary(runs: list[CheckRun], first: CheckRun | None, every_s: float, rules: int) -> dict[str, Any]:
    """The check runs of the "with" phases: wall (Celery's runtime) and worker CPU per run, and that CPU as a share
    of one CPU at beat's production rate of once a minute."""
    wall, cpu = [r.wall_ms for r in runs], [r.cpu_ms for r in runs]
    mean_cpu = sum(cpu) / len(cpu) if cpu else None
    outcomes: Counter[str] = Counter()
    for r in runs:
        outcomes.update(r.outcome)
    return {
        "every_s": every_s, "rules": rules, "runs": len(runs),
        "wall_ms": summary([w / 1000 for w in wall]), "cpu_ms": summary([c / 1000 for c in cpu]),
        "latency_ms": summary([r.latency_ms / 1000 for r in runs]),
        "production_cpu_pct_of_one_cpu": round(mean_cpu / 60_000 * 100, 3) if mean_cpu is not None else None,
        "outcomes": dict(outcomes), "first_run": vars(first) if first else None,
    }  # fmt: skip


def print_table(res: dict[str, Any]) -> None:
    checks = res.get("alert_checks")
    print(f"\nAPI under load: {res['requests']:,} requests in {res['measured_s']}s = {res['throughput_rps']} req/s, "
          f"{res['settings']['clients']} clients; server CPU {res['server_cpu_ms_per_request']} ms/request; load "
          f"average {res['machine']['loadavg'][0]}. In ms; raw: the same call to QueryService in-process"
          + ("; p95, n, p50, p99, verdict: the phases with the checks" if checks else ""))  # fmt: skip
    head = ("endpoint", "n", "p50", "p95", "p99", "raw p50", "raw p95", "p95/raw", "goal", "")
    rows: list[tuple] = [(*head[:4], "p95 w/o", "n w/o", "with/w/o", *head[4:]) if checks else head]
    without = {r["endpoint"]: r for r in res.get("endpoints_without_checks", [])}
    for r in res["endpoints"]:
        lo, raw, ok = r["load"], r["raw"], {True: "ok", False: "FAIL"}
        times = (lo["p50_ms"], lo["p95_ms"], lo["p99_ms"], raw["p50_ms"], raw["p95_ms"], r["ratio_p95"])
        verdict = f"p95 {ok[r['p95_ok']]}, ratio {ok[r['ratio_ok']]}" if lo["n"] else "FAIL: no answer"
        cells = ["-" if t is None else f"{t:.2f}" for t in times]
        if checks:
            other = without[r["endpoint"]]["load"]
            ratio = lo["p95_ms"] / other["p95_ms"] if lo["p95_ms"] and other["p95_ms"] else None
            verdict += "; w/o: " + (f"p95 {ok[without[r['endpoint']]['p95_ok']]}" if other["n"] else "no answer")
            cells[2:2] = ["-" if other["p95_ms"] is None else f"{other['p95_ms']:.2f}", other["n"],
                          "-" if ratio is None else f"{ratio:.2f}"]  # fmt: skip
        rows.append((r["endpoint"], lo["n"], *cells, r["goal_p95_ms"], verdict))
    harness.columns(rows)
    if checks:
        print("\n" + checks_reading(checks))
        for phase, tot in res["phases"].items():
            print(f"  {phase} checks: {tot['seconds']:.0f}s, {tot['requests']:,} requests, server CPU "
                  f"{tot['server_cpu_ms_per_request']} ms/request, worker CPU {tot['worker_cpu_ms_per_s']} ms/s, "
                  f"stores (Redis, Mongo, Kafka) CPU {tot['stores_cpu_ms_per_s']} ms/s, "
                  f"load average at its segments' starts {tot['loadavg']}")  # fmt: skip
    if res["non_200"] or res["errors"]:
        print(f"\nNOT 200: {res['non_200']}; errors: {res['errors'][:5]}")


def checks_reading(checks: dict[str, Any]) -> str:
    """The one-line reading of the check runs, as bench/README.md quotes it."""
    wall, cpu, first = checks["wall_ms"], checks["cpu_ms"], checks["first_run"]
    if not checks["runs"]:
        return f"checks every {checks['every_s']:g} s: no run finished in the 'with' phases"
    return (f"checks every {checks['every_s']:g} s (beat: once a minute): {checks['runs']} runs of {checks['rules']} "
            f"rules, mean wall {wall['mean_ms']:.0f} ms (p50 {wall['p50_ms']:.0f}, max {wall['max_ms']:.0f}), CPU "
            f"{cpu['mean_ms']:.0f} ms per run ({checks['production_cpu_pct_of_one_cpu']:.2f} % of one CPU at the "
            f"production rate of once a minute); outcomes {checks['outcomes']}; first run (worker start-up) wall "
            f"{first['wall_ms']:.0f} ms, CPU {first['cpu_ms']:.0f} ms")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.api_bench", description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--clients", type=int, default=24, help="concurrent client threads, one API key each (default 24)")
    add("--think-ms", type=float, default=2000.0, help="mean think time between a client's requests (default 2000)")
    # 180 s: ~65 answers of the rarest endpoints at the default load, enough for a p95.
    add("--duration", type=float, default=180.0, help="measured seconds of load (default 180)")
    add("--warmup", type=float, default=10.0, help="seconds of load before measuring (default 10)")
    add("--raw-reps", type=int, default=40, help="in-process calls per endpoint, half before, half after the load")
    add("--days", type=int, default=90, help="settled days in Mongo (default 90)")
    add("--events", type=int, default=300_000, help="page views in the Redis counters (default 300000)")
    add(
        "--alert-checks",
        action="store_true",
        help="also run the alert checks in a Celery worker: 2 x --duration "
        "of load in alternating phases without and with them (20 rules on the site; ~10 min in all)",
    )
    add(
        "--check-every",
        type=float,
        default=10.0,
        help="seconds between check runs in the 'with' phases (default 10; beat runs them once a minute)",
    )
    add(
        "--alert-rounds",
        type=int,
        default=2,
        help="rounds of a phase without and one with the checks, every other "
        "reversed (default 2: without, with, with, without)",
    )
    add("--out", type=Path, default=OUT / "api.json")
    args = parser.parse_args(argv)
    if args.alert_rounds < 1 or args.check_every <= 0:
        parser.error("--alert-rounds must be at least 1 and --check-every above 0")
    return harness.run_main(lambda cleanup: run(args, cleanup), print_table, args.out)


if __name__ == "__main__":
    sys.exit(main())
