"""Query API load benchmark: latency per endpoint under concurrent clients, next to the raw store query
time of the same work in the same run, on the stack the environment names. Goals: p95 <= 100 ms (realtime),
<= 300 ms (history), <= 3 x raw p95. Usage and figures: bench/README.md."""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import math
import os
import random
import secrets
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

import redis
import urllib3

from bench import harness
from bench.api_data import FUNNEL_DEF, GOAL_DEFS, SEED, TZ, Definitions, seed
from bench.harness import OUT, REPO, BenchError, Server, machine, manage, unlink_matching
from footfall.config import load_config
from footfall.goals import FunnelSpec, GoalSpec
from footfall.vocabulary import BREAKDOWN_METRICS, CUSTOM_EVENT_DIMENSIONS, INTERVALS, METRICS
from historical.store import ROLLUP_COLLECTIONS, RUNS, connect
from query import params as p
from query.conversions import Conversions
from query.realtime import RealtimeQueries
from query.service import QueryService, SiteInfo
from realtime.keys import PREFIX, KeyLayout
from realtime.store import CounterStore

GOALS = {"realtime_p95_ms": 100.0, "history_p95_ms": 300.0, "ratio": 3.0}
TIMEOUT, RAW_BUDGET_S = 120, 60.0


Call = Callable[[QueryService, SiteInfo, dict[str, str], Definitions], object]


def _range(svc: QueryService, site: SiteInfo, q: dict[str, str]) -> p.Range:
    return p.parse_range(q, site.tz, svc.now(), p.DEFAULT_SPAN["day"], p.MAX_RANGE)


def _timeseries(svc: QueryService, site: SiteInfo, q: dict[str, str], _: Definitions) -> object:
    metric, interval = p.choice(q, "metric", METRICS, "pageviews"), p.choice(q, "interval", INTERVALS, "day")
    rng = p.parse_range(q, site.tz, svc.now(), p.DEFAULT_SPAN[interval], p.MAX_SPAN[interval])
    return svc.timeseries(site, metric, interval, rng, p.parse_filters(q.get("filters")))


def _breakdown(dimension: str) -> Call:
    def call(svc: QueryService, site: SiteInfo, q: dict[str, str], _: Definitions) -> object:
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


def _realtime(svc: QueryService, site: SiteInfo, q: dict[str, str], _: Definitions) -> object:
    return svc.realtime(site, p.bounded_int(q, "minutes", 30, 1, 180), p.bounded_int(q, "limit", 10, 1, 100))


def _aggregate(svc: QueryService, site: SiteInfo, q: dict[str, str], _: Definitions) -> object:
    compare = p.choice(q, "compare", ("previous_period", "none"), "none") == "previous_period"
    return svc.aggregate(site, _range(svc, site, q), compare)


def _goals(svc: QueryService, site: SiteInfo, q: dict[str, str], defs: Definitions) -> object:
    return Conversions(svc).goals(site, _range(svc, site, q), defs.goals)


def _event_properties(event: str, prop: str) -> Call:
    def call(svc: QueryService, site: SiteInfo, q: dict[str, str], _: Definitions) -> object:
        limit, page = p.bounded_int(q, "limit", 10, 1, p.MAX_LIMIT), p.bounded_int(q, "page", 1, 1, 100_000)
        return Conversions(svc).event_properties(site, event, prop, _range(svc, site, q), limit, page)

    return call


def _funnel(svc: QueryService, site: SiteInfo, q: dict[str, str], defs: Definitions) -> object:
    return Conversions(svc).funnel(site, defs.funnel, _range(svc, site, q))


def _goal_breakdown(dimension: str) -> Call:
    """The breakdown of ``dimension`` filtered by the site's first goal, as ``BreakdownView`` answers ``goal``."""

    def call(svc: QueryService, site: SiteInfo, q: dict[str, str], defs: Definitions) -> object:
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


def raw_round(svc: QueryService, site: SiteInfo, defs: Definitions, plans: list[tuple[Endpoint, list[dict[str, str]]]],
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


def client_loop(port: int, key: str, urls: dict[str, list[str]], rng: random.Random, think_s: float, t_measure: float,
                t_end: float, samples: list[tuple[str, float, int]], errors: list[str]) -> None:  # fmt: skip
    """One client: pick an endpoint by weight, GET one of its URLs, think; record what was started
    after ``t_measure`` (list appends are atomic)."""
    pool = urllib3.HTTPConnectionPool("127.0.0.1", port, maxsize=1, block=True, retries=False, timeout=TIMEOUT)
    headers = {"Authorization": f"Bearer {key}", "X-Forwarded-Proto": "https", "Accept": "application/json"}
    weights = [e.weight for e in MIX]
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
            if now >= t_measure:
                samples.append((name, time.perf_counter() - start, status))
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
    server_env = harness.server_env(env, workdir, "footfall.settings", FOOTFALL_API_RATE_PER_MINUTE="1000000")
    manage(server_env, "migrate", "--noinput", "-v", "0")
    manage(server_env, "create_site", site, "--domain", "bench.example", "--timezone", TZ)
    script = SET_UP_SITE.format(site=site, n=args.clients, goals=GOAL_DEFS, funnel=FUNNEL_DEF)
    out = manage(server_env, "shell", "-c", script)
    if len(keys := [line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("KEY ")]) != args.clients:
        raise BenchError(f"expected {args.clients} API keys, got {len(keys)}:\n{out}")
    made = json.loads(next(line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("DEFS ")))
    defs = Definitions(tuple(map(GoalSpec.from_json, made["goals"])), FunnelSpec.from_json(made["funnel"]))
    seeding = seed(db, store, site, days, args.events, cfg.realtime_retention_s, defs)
    server = Server("api", server_env, workdir / "gunicorn.log", keep_alive=10, timeout=TIMEOUT)
    cleanup.callback(server.stop)
    pool = urllib3.HTTPConnectionPool("127.0.0.1", server.port, maxsize=1, retries=False, timeout=float(TIMEOUT))
    headers = {"Authorization": f"Bearer {keys[0]}", "X-Forwarded-Proto": "https"}
    print(f"starting gunicorn on {server.url}: {' '.join(server.args)}", flush=True)
    server.start(lambda: pool.request("GET", f"/api/v1/sites/{site}/realtime?minutes=1", headers=headers).status == 200)

    # Raw reads sum every trend block in Redis: no remembered baselines, as no settled cache.
    svc = QueryService(db, RealtimeQueries(store, baseline_memory_items=0), cfg.realtime_retention_s)
    info = SiteInfo(site, TZ)
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
    print(f"load: {args.clients} clients, think {args.think_ms:g} ms, {args.warmup:g}s warm-up + {args.duration:g}s")
    cpu0, t0, samples, errors = server.cpu_s(), time.monotonic(), list[tuple[str, float, int]](), list[str]()
    threads = [threading.Thread(target=client_loop, daemon=True, args=(
        server.port, key, urls, random.Random(SEED * 1000 + i), args.think_ms / 1000, t0 + args.warmup,
        t0 + args.warmup + args.duration, samples, errors)) for i, key in enumerate(keys)]  # fmt: skip
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=args.warmup + args.duration + TIMEOUT + 30)
    server_cpu = server.cpu_s() - cpu0
    raw_round(svc, info, defs, plans, args.raw_reps - args.raw_reps // 2, raw, RAW_BUDGET_S / 2)

    statuses: dict[str, Counter[int]] = {endpoint.name: Counter() for endpoint in MIX}
    for name, _, status in samples:
        statuses[name][status] += 1
    rate = len(samples) / args.duration  # requests started in the measured time, also those answered after it
    rows = []
    for endpoint in MIX:
        goal_ms = GOALS[f"{endpoint.kind}_p95_ms"]
        under = summary([elapsed for name, elapsed, status in samples if name == endpoint.name and status == 200])
        raw_s = summary(raw.get(endpoint.name, []))
        ratio = under["p95_ms"] / raw_s["p95_ms"] if under["p95_ms"] and raw_s["p95_ms"] else None
        rows.append({
            "endpoint": endpoint.name, "kind": endpoint.kind, "urls": urls[endpoint.name],
            "statuses": {str(k): v for k, v in sorted(statuses[endpoint.name].items())},
            "load": under, "raw": raw_s, "ratio_p95": round(ratio, 2) if ratio else None,
            "goal_p95_ms": goal_ms, "p95_ok": under["p95_ms"] is not None and under["p95_ms"] <= goal_ms,
            "ratio_ok": ratio is not None and ratio <= GOALS["ratio"],
        })  # fmt: skip
    return {
        "when": now.isoformat(timespec="seconds"), "machine": machine(),
        "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}, "goals": GOALS,
        "seeding": seeding, "settled_days": [days[0].isoformat(), days[-1].isoformat()], "today": today.isoformat(),
        "throughput_rps": round(rate, 1), "requests": len(samples), "measured_s": args.duration,
        "server_cpu_ms_per_request": round(server_cpu * 1000 / (rate * (args.warmup + args.duration)), 2)
        if rate else None,
        "errors": errors[:20], "non_200": {n: dict(s) for n, s in statuses.items() if set(s) - {200}},
        "endpoints": rows, "ok": not errors and all(set(s) <= {200} for s in statuses.values()),
    }  # fmt: skip


def print_table(res: dict[str, Any]) -> None:
    print(f"\nAPI under load: {res['requests']:,} requests in {res['measured_s']}s = {res['throughput_rps']} req/s, "
          f"{res['settings']['clients']} clients; server CPU {res['server_cpu_ms_per_request']} ms/request; load "
          f"average {res['machine']['loadavg'][0]}. In ms; raw: the same call to QueryService in-process")  # fmt: skip
    rows: list[tuple] = [("endpoint", "n", "p50", "p95", "p99", "raw p50", "raw p95", "p95/raw", "goal", "")]
    for r in res["endpoints"]:
        lo, raw, ok = r["load"], r["raw"], {True: "ok", False: "FAIL"}
        times = (lo["p50_ms"], lo["p95_ms"], lo["p99_ms"], raw["p50_ms"], raw["p95_ms"], r["ratio_p95"])
        verdict = f"p95 {ok[r['p95_ok']]}, ratio {ok[r['ratio_ok']]}" if lo["n"] else "FAIL: no answer"
        cells = ("-" if t is None else f"{t:.2f}" for t in times)
        rows.append((r["endpoint"], lo["n"], *cells, r["goal_p95_ms"], verdict))
    harness.columns(rows)
    if res["non_200"] or res["errors"]:
        print(f"\nNOT 200: {res['non_200']}; errors: {res['errors'][:5]}")


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
    add("--out", type=Path, default=OUT / "api.json")
    args = parser.parse_args(argv)
    return harness.run_main(lambda cleanup: run(args, cleanup), print_table, args.out)


if __name__ == "__main__":
    sys.exit(main())
