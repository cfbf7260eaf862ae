"""Query API load benchmark: latency per endpoint under many concurrent clients, next to the
raw store query time of the same work measured in the same run.

Usage, from the repository root with a stack's environment set (``eval "$(python -m
deploy.local.stack env)"`` after ``stack start redis mongo kafka``)::

    python -m bench.api_bench [--clients 24] [--think-ms 2000] [--duration 180] [--warmup 10]
        [--raw-reps 40] [--raw-budget 60] [--timeout 120] [--workers 2] [--threads 4] [--port PORT]
        [--cache-items 200000]
        [--endpoints PREFIX,...] [--days 90] [--unsettled 1] [--daily-pageviews 150000]
        [--pages 200] [--referrers 50] [--pair-min 2] [--events 300000] [--loader insert|load_day]
        [--tz Europe/Berlin] [--seed 7] [--reuse SITE] [--keep-data] [--keep-workdir]
        [--out artifacts/bench/api.json]

**Data.** A fresh site (``apibench-<hex>``, time zone ``--tz``) gets ``--days`` settled days of
rollup documents as :func:`historical.store.load_day` writes them (daily, 24 hourly, breakdowns
of ~200 pages, ~50 referrers and their referrer URLs, referrer→page pairs, entry pages, UTM,
browsers, OS, devices, countries, with a weekly rhythm and noise; plus ``batch_runs``) ending
``--unsettled`` site-local days before today (``--loader insert``: the same documents by plain
inserts, faster to seed; ``load_day``: the real loader), and
``--events`` page views in the Redis counters spread over the realtime retention window
(DemoTraffic visitors, user agents and countries, pages and referrers drawn from the same
vocabulary as the rollups, a daily rhythm), applied with :func:`realtime.aggregate.aggregate`
through :meth:`realtime.store.CounterStore.apply`. By default the newest settled day is the day
before yesterday: yesterday and today are answered from Redis (the hours between midnight and
the nightly rollup; ``--unsettled 0`` for the rest of the day). A private SQLite database
(``DATABASE_URL`` in a temporary directory, ``manage.py migrate``) holds the site and one read
key per client.

**Load.** gunicorn (``gthread``, ``--workers`` x ``--threads``, on ``$FOOTFALL_WEB_PORT`` if
set) serves ``footfall.wsgi`` with DEBUG off, behind a pretend TLS proxy
(``X-Forwarded-Proto``), the per-key rate limit raised (``FOOTFALL_API_RATE_PER_MINUTE``), the
cache of settled reads as configured by default (``--cache-items``, 0 turns it off).
``--clients`` threads (urllib3, keep-alive, one key each) loop for ``--warmup`` + ``--duration``
seconds: pick an endpoint of :data:`MIX` by weight, GET it, wait an exponential think time of
mean ``--think-ms``. Latency is measured by the client, request sent → body read.

**Raw.** The same :class:`api.query.service.QueryService` call each endpoint's view makes (same
parameters, parsed by :mod:`api.query.params`), in this process, no HTTP, no Django, without the
cache of settled reads (so it is the store query itself), one at a time: ``--raw-reps`` times
per endpoint, endpoints interleaved, half before the load and half after it (an endpoint stops
early after ``--raw-budget`` seconds). The time spent inside pymongo cursor fetches and
redis-py round trips (network, store, decoding) is recorded apart as "store I/O"; the rest of
raw is the service's Python.

Prints a table with the goals (p95 ≤ 100 ms for realtime, ≤ 300 ms for history; p95 ≤ 3x raw
p95), writes JSON to ``--out``. Exit status 0 even when a goal is missed, 1 when the benchmark
itself failed (a server did not start, a request was not answered 200). Removes its site's
documents and keys at the end unless ``--keep-data``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import functools
import json
import math
import os
import platform
import random
import resource
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any
from zoneinfo import ZoneInfo

import msgspec
import pymongo.synchronous.cursor
import redis
import urllib3

import historical.store
from api.query import params as p
from api.query.service import QueryService, SiteInfo
from bench.cpu import group_seconds, stack_pid
from bench.harness import PYTHON, BenchError, Server, free_port
from footfall.config import load_config
from footfall.demo import DemoTraffic
from footfall_capture.events import Event, Utm
from historical.buckets import day_buckets
from historical.store import (
    BREAKDOWNS,
    DAILY,
    HOURLY,
    RUNS,
    DayDocuments,
    connect,
    ensure_indexes,
    hour_document,
    load_day,
)
from realtime.keys import PREFIX, REFPAGE_SEPARATOR, KeyLayout
from realtime.queries import RealtimeQueries
from realtime.store import CounterStore

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "artifacts" / "bench" / "api.json"
GOALS = {"realtime_p95_ms": 100.0, "history_p95_ms": 300.0, "ratio": 3.0}


# --- the site's vocabulary (pure, seeded) ------------------------------------------------------
def zipf(n: int, s: float) -> list[float]:
    weights = [1.0 / (i + 1) ** s for i in range(n)]
    total = sum(weights)
    return [w / total for w in weights]


SECTIONS = ["blog", "docs", "guides", "changelog", "customers", "integrations"]
WORDS = ["kafka", "spark", "redis", "lambda", "api", "metrics", "privacy", "cookies", "scale", "guide", "intro",
         "deep", "dive", "tips", "release", "notes"]  # fmt: skip
SEARCH = ["google.com", "bing.com", "duckduckgo.com", "search.yahoo.com", "ecosia.org", "yandex.ru", "baidu.com"]
SOCIAL = ["news.ycombinator.com", "reddit.com", "t.co", "facebook.com", "linkedin.com", "lobste.rs", "mastodon.social"]
EMAIL = ["mail.google.com", "outlook.live.com", "mail.yahoo.com"]
BROWSERS = [("Chrome", 45), ("Safari", 12), ("Mobile Safari", 15), ("Chrome Mobile", 10), ("Firefox", 7),
            ("Edge", 6), ("Samsung Internet", 3), ("Opera", 2)]  # fmt: skip
OSES = [("Windows", 38), ("Mac OS X", 18), ("iOS", 20), ("Android", 17), ("Linux", 5), ("Chrome OS", 2)]
DEVICES = [("desktop", 58), ("mobile", 38), ("tablet", 4)]
COUNTRIES = ["US", "DE", "GB", "FR", "IN", "BR", "JP", "NL", "CA", "AU", "ES", "IT", "PL", "SE", "CH", "AT",
             "BE", "DK", "NO", "FI", "IE", "PT", "CZ", "RO", "HU", "GR", "TR", "IL", "ZA", "MX", "AR", "CL",
             "CO", "KR", "TW", "SG", "ID", "VN", "PH", "NZ"]  # fmt: skip
UTM_SOURCES = ["newsletter", "twitter", "linkedin", "facebook", "hn", "reddit", "google", "partner-acme",
               "partner-globex", "podcast", "youtube", "producthunt"]  # fmt: skip
UTM_MEDIUMS = [("email", 35), ("social", 35), ("cpc", 15), ("referral", 10), ("affiliate", 5)]
UTM_CAMPAIGNS = [f"newsletter-{n}" for n in range(40, 52)] + [
    "spring-launch", "black-friday", "webinar-kafka", "webinar-spark", "docs-refresh", "pricing-test",
    "retargeting", "brand", "conference-2026", "case-study", "free-trial", "api-launch", "holiday",
]  # fmt: skip


@dataclass(frozen=True)
class Vocabulary:
    pages: list[tuple[str, str]]  # (path, title), most popular first
    page_share: list[float]
    refs: list[tuple[str, str]]  # (domain or "(direct)", ref_type), most traffic first
    ref_share: list[float]
    ref_urls: dict[str, list[str]]
    pair_min: int = 2  # referrer→page pairs with fewer views a day get no document

    @staticmethod
    def build(seed: int, n_pages: int = 200, n_refs: int = 50, pair_min: int = 2) -> Vocabulary:
        rng = random.Random(f"{seed}:vocabulary")
        pages = [
            ("/", "Home"),
            ("/pricing", "Pricing"),
            ("/docs", "Documentation"),
            ("/blog", "Blog"),
            ("/about", "About"),
            ("/contact", "Contact"),
            ("/signup", "Sign up"),
            ("/login", "Log in"),
        ]
        while len(pages) < n_pages:
            section = rng.choice(SECTIONS)
            slug = "-".join(rng.sample(WORDS, 3))
            path = f"/{section}/{slug}-{len(pages)}"
            pages.append((path, slug.replace("-", " ").capitalize()))
        named = [(d, "search") for d in SEARCH] + [(d, "social") for d in SOCIAL] + [(d, "email") for d in EMAIL]
        others = [(f"{w}.example", "other") for w in ("dev-weekly", "hn-digest", "awesome-lists", "stack-blog")]
        others += [(f"blog-{i}.example.org", "other") for i in range(n_refs - len(named) - len(others))]
        tail = named[2:] + others
        rng.shuffle(tail)
        refs = [("(direct)", "direct"), *named[:2], *tail][: n_refs + 1]
        ref_share = [0.33, *[0.67 * w for w in zipf(len(refs) - 1, 1.1)]]
        ref_urls = {
            d: [f"https://{d}/"] + [f"https://{d}/{rng.choice(['r', 'post', 'item', 'p'])}/{i}" for i in range(k)]
            for d, _ in refs[1:]
            for k in [rng.randrange(0, 4)]
        }
        pages = pages[:n_pages]
        return Vocabulary(pages, zipf(len(pages), 1.05), refs, ref_share, ref_urls, pair_min)


def split_weights(pairs: list[tuple[str, int]]) -> list[tuple[str, float]]:
    total = sum(w for _, w in pairs)
    return [(v, w / total) for v, w in pairs]


# --- settled days in Mongo -----------------------------------------------------------------------
HOUR_SHAPE = [0.25, 0.18, 0.14, 0.12, 0.13, 0.2, 0.38, 0.62, 0.9, 1.1, 1.22, 1.28,
              1.3, 1.32, 1.35, 1.36, 1.33, 1.28, 1.22, 1.2, 1.15, 1.0, 0.75, 0.45]  # fmt: skip
HOUR_SHARE = [w / sum(HOUR_SHAPE) for w in HOUR_SHAPE]


def day_documents(site: str, day: dt.date, tz: str, vocab: Vocabulary, daily_pv: int, seed: int) -> DayDocuments:
    """One settled day, shaped like the Spark rollup's output (``spark_jobs/rollup.py``)."""
    rng = random.Random(f"{seed}:{site}:{day}")
    weekday = 0.72 if day.weekday() >= 5 else 1.0
    pv_total = int(daily_pv * weekday * rng.uniform(0.85, 1.15))
    visitors = int(pv_total / rng.uniform(2.4, 2.9))
    sessions = int(visitors * rng.uniform(1.1, 1.25))
    bounces = int(sessions * rng.uniform(0.45, 0.6))
    duration = round(rng.uniform(70, 130), 3)
    bots = int(pv_total * rng.uniform(0.05, 0.1))
    custom = int(pv_total * rng.uniform(0.02, 0.05))
    daily = {"pageviews": pv_total, "visitors": visitors, "sessions": sessions, "bounces": bounces,
             "bounce_rate": round(bounces / sessions, 6), "visit_duration_s": duration,
             "events": pv_total + custom, "bot_events": bots, "custom_events": custom}  # fmt: skip

    def part(total: int, share: float) -> int:
        return round(total * share * rng.uniform(0.8, 1.2))

    # One document per bucket of the local day (25 or 23 on a clock change), shaped by its local hour.
    hourly = [
        {**hour_document(day.isoformat(), tz, b.start_ms), "pageviews": part(pv_total, s), "visitors":
         part(visitors, s * 1.6), "sessions": part(sessions, s), "events": part(pv_total + custom, s),
         "bot_events": part(bots, 1 / 24)}
        for b in day_buckets(day, ZoneInfo(tz)) for s in [HOUR_SHARE[b.local_start(ZoneInfo(tz)).hour]]
    ]  # fmt: skip
    rows: list[dict[str, object]] = []

    def add(dim: str, value: str, pv: int, **extra: object) -> None:
        if pv > 0:
            visitors = max(1, int(pv / rng.uniform(1.2, 1.9)))
            row = {"dimension": dim, "value": value, "pageviews": pv, "visitors": visitors, "sessions": None}
            row |= {"bounces": None, "visit_duration_s": None, "ref": None, "page": None}
            rows.append(row | extra)

    for (path, _), share in zip(vocab.pages, vocab.page_share, strict=True):
        add("page", path, part(pv_total, share))
    type_pv: dict[str, int] = {}
    for (ref, kind), share in zip(vocab.refs, vocab.ref_share, strict=True):
        ref_pv = part(pv_total, share)
        add("ref", ref, ref_pv)
        type_pv[kind] = type_pv.get(kind, 0) + ref_pv
        urls = vocab.ref_urls.get(ref, [])
        for i, url in enumerate(urls):
            add("refurl", url, int(ref_pv * (0.6 if i == 0 else 0.4 / (len(urls) - 1))))
        # Which pages each referrer drives traffic to: the pair's share, rare pairs left out.
        for (path, _), page_share in zip(vocab.pages, vocab.page_share, strict=True):
            pair_pv = part(ref_pv, page_share)
            if pair_pv >= vocab.pair_min:
                add("refpage", f"{ref}{REFPAGE_SEPARATOR}{path}", pair_pv, ref=ref, page=path)
    for kind, pv in type_pv.items():
        add("ref_type", kind, pv)
    entries = vocab.pages[:150]
    for (path, _), n in zip(entries, [part(sessions, s) for s in zipf(len(entries), 1.2)], strict=True):
        if n > 0:
            b = int(n * rng.uniform(0.35, 0.7))
            add("entry_page", path, int(n * rng.uniform(1.5, 3)), sessions=n, bounces=b,
                visit_duration_s=round(rng.uniform(20, 200), 3))  # fmt: skip
    utm_pv = int(pv_total * rng.uniform(0.06, 0.1))
    for value, share in zip(UTM_SOURCES, zipf(len(UTM_SOURCES), 1.0), strict=True):
        add("utm_source", value, part(utm_pv, share))
    for value, share in split_weights(UTM_MEDIUMS):
        add("utm_medium", value, part(utm_pv, share))
    for value, share in zip(UTM_CAMPAIGNS, zipf(len(UTM_CAMPAIGNS), 0.9), strict=True):
        add("utm_campaign", value, part(utm_pv, share))
    for dim, table in (("browser", BROWSERS), ("os", OSES), ("device", DEVICES)):
        for value, share in split_weights(table):
            add(dim, value, part(pv_total, share))
    for value, share in zip(COUNTRIES, zipf(len(COUNTRIES), 1.1), strict=True):
        add("country", value, part(pv_total, share))
    run = {"status": "complete", "events_read": pv_total + custom + bots, "pageviews": pv_total, "tz": tz,
           "computed_at": dt.datetime.now(dt.UTC), "spark_master": "api_bench (synthetic)"}  # fmt: skip
    return DayDocuments(site, day.isoformat(), daily, hourly, rows, run)


def insert_day(db: Any, day: DayDocuments) -> int:
    """Write a day's documents as :func:`historical.store.load_day` would (same ``_id``s and fields,
    ``batch_runs`` last), by plain inserts: only for a site that has no documents yet."""
    daily, hourly, breakdowns = historical.store._with_ids(day)
    for name, docs in ((DAILY, [daily]), (HOURLY, hourly), (BREAKDOWNS, breakdowns)):
        for start in range(0, len(docs), 5000):
            db[name].insert_many(docs[start : start + 5000], ordered=False)
    db[RUNS].insert_one(historical.store.run_document(day))
    return 1 + len(hourly) + len(breakdowns)


def seed_history(
    db: Any, site: str, days: list[dt.date], tz: str, vocab: Vocabulary, daily_pv: int, seed: int, loader: str
) -> int:
    ensure_indexes(db)
    docs = 0
    for i, day in enumerate(days):
        documents = day_documents(site, day, tz, vocab, daily_pv, seed)
        if loader == "load_day":
            docs += load_day(db, documents)["written"]
        else:
            docs += insert_day(db, documents)
        if (i + 1) % 15 == 0 or i + 1 == len(days):
            print(f"  mongo: {i + 1}/{len(days)} days, {docs:,} documents", flush=True)
    return docs


# --- recent minutes in Redis ---------------------------------------------------------------------
def realtime_events(
    site: str, start_ms: int, end_ms: int, n: int, tz: ZoneInfo, vocab: Vocabulary, seed: int
) -> Iterator[Event]:
    """``n`` page views over ``[start_ms, end_ms)``, in time order, shaped by the local hour."""
    rng = random.Random(f"{seed}:{site}:realtime")
    demo = DemoTraffic(site_id=site, host="bench.example", visitors=max(1000, n // 5), seed=seed)
    minutes = range(start_ms // 60_000 + 1, end_ms // 60_000)
    weights = [HOUR_SHAPE[dt.datetime.fromtimestamp(m * 60, tz).hour] for m in minutes]
    scale = n / sum(weights)
    pages, refs = vocab.pages, vocab.refs
    for minute, weight in zip(minutes, weights, strict=True):
        count = int(weight * scale) + (rng.random() < weight * scale % 1)
        page_picks = rng.choices(range(len(pages)), cum_weights=_cum(vocab.page_share), k=count)
        ref_picks = rng.choices(range(len(refs)), cum_weights=_cum(vocab.ref_share), k=count)
        for offset, page_i, ref_i in sorted(
            zip(rng.choices(range(60_000), k=count), page_picks, ref_picks, strict=True)
        ):
            event = demo.event(minute * 60_000 + offset)
            path, title = pages[page_i]
            ref, kind = refs[ref_i]
            referrer = rng.choice(vocab.ref_urls[ref]) if ref != "(direct)" else None
            utm = None
            if kind in {"social", "email"} and rng.random() < 0.4:
                utm = Utm(source=rng.choice(UTM_SOURCES), medium=kind, campaign=rng.choice(UTM_CAMPAIGNS))
            yield msgspec.structs.replace(
                event, url=f"https://bench.example{path}", path=path, title=title, referrer=referrer,
                ref_domain=None if ref == "(direct)" else ref, ref_type=kind, utm=utm,
            )  # fmt: skip


@functools.cache
def _cum_cached(weights: tuple[float, ...]) -> list[float]:
    out, total = [], 0.0
    for w in weights:
        total += w
        out.append(total)
    return out


def _cum(weights: list[float]) -> list[float]:
    return _cum_cached(tuple(weights))


def seed_realtime(store: CounterStore, events: Iterator[Event], total: int, batch: int = 5000) -> int:
    counted, chunk = 0, []
    for event in events:
        chunk.append(event)
        if len(chunk) == batch:
            counted += store.apply(chunk, int(time.time() * 1000)).counted
            chunk = []
            if counted % 50_000 < batch:
                print(f"  redis: {counted:,}/~{total:,} events", flush=True)
    if chunk:
        counted += store.apply(chunk, int(time.time() * 1000)).counted
    return counted


def delete_site(db: Any, client: redis.Redis, site: str) -> None:
    for name in (DAILY, HOURLY, BREAKDOWNS, RUNS):
        db[name].delete_many({"site_id": site})
    for pattern in (f"{PREFIX}:{site}:*", f"{PREFIX}:seen:{site}:*"):
        keys: list[bytes] = []
        for key in client.scan_iter(match=pattern, count=5000):
            keys.append(key)
            if len(keys) >= 5000:
                client.unlink(*keys)
                keys = []
        if keys:
            client.unlink(*keys)


# --- the endpoints and the mix -------------------------------------------------------------------
Call = Callable[[QueryService, SiteInfo, dict[str, str]], object]


def _timeseries(svc: QueryService, site: SiteInfo, q: dict[str, str]) -> object:  # as views.TimeseriesView
    metric = p.choice(q, "metric", p.METRICS, "pageviews")
    interval = p.choice(q, "interval", p.INTERVALS, "day")
    rng = p.parse_range(q, site.tz, svc.now(), p.DEFAULT_SPAN[interval], p.MAX_SPAN[interval])
    return svc.timeseries(site, metric, interval, rng, p.parse_filters(q.get("filters")))


def _breakdown_args(q: dict[str, str]) -> tuple[int, int, tuple[str, ...]]:
    limit = p.bounded_int(q, "limit", 10, 1, p.MAX_LIMIT)
    page = p.bounded_int(q, "page", 1, 1, 100_000)
    return limit, page, p.parse_metrics(q.get("metrics"), p.BREAKDOWN_METRICS, ("pageviews", "visitors"))


def _breakdown(dimension: str) -> Call:
    def call(svc: QueryService, site: SiteInfo, q: dict[str, str]) -> object:  # as views.BreakdownView
        limit, page, metrics = _breakdown_args(q)
        rng = p.parse_range(q, site.tz, svc.now(), p.DEFAULT_SPAN["day"], p.MAX_RANGE)
        return svc.breakdown(site, p.dimension(dimension), rng, limit, page, metrics)

    return call


def _referrer_pages(svc: QueryService, site: SiteInfo, q: dict[str, str]) -> object:  # as views.ReferrerPagesView
    q = dict(q)
    ref = p.text_value(q.pop("_ref"), "ref_domain")
    limit, page, metrics = _breakdown_args(q)
    rng = p.parse_range(q, site.tz, svc.now(), p.DEFAULT_SPAN["day"], p.MAX_RANGE)
    return svc.breakdown(site, "refpage", rng, limit, page, metrics, ref=ref)


def _realtime(svc: QueryService, site: SiteInfo, q: dict[str, str]) -> object:  # as views.RealtimeView
    return svc.realtime(site, p.bounded_int(q, "minutes", 30, 1, 180), p.bounded_int(q, "limit", 10, 1, 100))


def _aggregate(svc: QueryService, site: SiteInfo, q: dict[str, str]) -> object:  # as views.AggregateView
    compare = p.choice(q, "compare", ("previous_period", "none"), "none") == "previous_period"
    rng = p.parse_range(q, site.tz, svc.now(), p.DEFAULT_SPAN["day"], p.MAX_RANGE)
    return svc.aggregate(site, rng, compare)


@dataclass(frozen=True)
class Endpoint:
    name: str
    kind: str  # "realtime" or "history": which latency goal applies
    weight: float  # share of the requests
    path: str  # under /api/v1/sites/<site>/
    query: Callable[[dt.date], dict[str, str]]  # today (site-local) -> query parameters
    call: Call
    refs: bool = False  # the path holds a referrer, drawn per request from the top referrers

    def goal_ms(self) -> float:
        return GOALS["realtime_p95_ms"] if self.kind == "realtime" else GOALS["history_p95_ms"]


def _since(days: int, **extra: str) -> Callable[[dt.date], dict[str, str]]:
    """The last ``days`` site-local days, today included (``to`` left to default: now)."""
    return lambda today: {"from": (today - dt.timedelta(days=days - 1)).isoformat(), **extra}


# Dashboard polling dominates; history views are opened now and then, 90-day ones least.
MIX = [
    Endpoint("realtime 30m", "realtime", 40, "realtime", lambda _: {"minutes": "30"}, _realtime),
    Endpoint(
        "timeseries day 7d", "history", 8, "timeseries", _since(7, interval="day", metric="visitors"), _timeseries
    ),
    Endpoint(
        "timeseries day 30d", "history", 8, "timeseries", _since(30, interval="day", metric="visitors"), _timeseries
    ),
    Endpoint(
        "timeseries day 90d", "history", 6, "timeseries", _since(90, interval="day", metric="visitors"), _timeseries
    ),
    Endpoint(
        "timeseries hour 2d",
        "history",
        8,
        "timeseries",
        lambda _: {"interval": "hour", "metric": "pageviews"},
        _timeseries,
    ),
    Endpoint("breakdown pages 7d", "history", 5, "breakdown/pages", _since(7), _breakdown("pages")),
    Endpoint("breakdown pages 30d", "history", 5, "breakdown/pages", _since(30), _breakdown("pages")),
    Endpoint("breakdown pages 90d", "history", 4, "breakdown/pages", _since(90), _breakdown("pages")),
    Endpoint("breakdown referrers 7d", "history", 4, "breakdown/referrers", _since(7), _breakdown("referrers")),
    Endpoint("breakdown referrers 30d", "history", 3, "breakdown/referrers", _since(30), _breakdown("referrers")),
    Endpoint("breakdown referrers 90d", "history", 3, "breakdown/referrers", _since(90), _breakdown("referrers")),
    Endpoint("referrer pages 30d", "history", 3, "referrers/{ref}/pages", _since(30), _referrer_pages, refs=True),
    Endpoint("aggregate 30d +compare", "history", 3, "aggregate", _since(30, compare="previous_period"), _aggregate),
]


def percentile(values: list[float], pct: float) -> float | None:
    """Nearest-rank percentile (``None`` for no values)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(pct / 100 * len(ordered)) - 1)]


def summary(values_s: list[float]) -> dict[str, Any]:
    ms = [v * 1000 for v in values_s]
    return {
        "n": len(ms),
        "p50_ms": percentile(ms, 50),
        "p95_ms": percentile(ms, 95),
        "p99_ms": percentile(ms, 99),
        "max_ms": max(ms) if ms else None,
        "mean_ms": sum(ms) / len(ms) if ms else None,
    }


# --- raw: the service in-process, with the time inside the store clients ---------------------------
class StoreTimer:
    """Wall time spent inside pymongo cursor fetches and redis-py round trips (this process only)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls = 0
        self._depth = threading.local()
        self._originals: list[tuple[type, str, Callable[..., Any]]] = []

    def install(self) -> None:
        for cls, name in (
            (pymongo.synchronous.cursor.Cursor, "_refresh"),
            (redis.client.Pipeline, "execute"),
            (redis.Redis, "execute_command"),
        ):
            original = getattr(cls, name)
            self._originals.append((cls, name, original))
            setattr(cls, name, self._wrap(original))

    def uninstall(self) -> None:
        for cls, name, original in reversed(self._originals):
            setattr(cls, name, original)
        self._originals.clear()

    def _wrap(self, original: Callable[..., Any]) -> Callable[..., Any]:
        timer = self

        @functools.wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            depth = getattr(timer._depth, "n", 0)
            if depth:  # nested (e.g. a pipeline's own commands): counted by the outer call
                return original(*args, **kwargs)
            timer._depth.n = 1
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                timer.seconds += time.perf_counter() - start
                timer.calls += 1
                timer._depth.n = 0

        return timed


def raw_round(
    svc: QueryService, site: SiteInfo, plans: list[tuple[Endpoint, list[dict[str, str]]]], reps: int, timer: StoreTimer,
    out: dict[str, dict[str, list[float]]], budget_s: float = math.inf,
) -> None:  # fmt: skip
    """``reps`` calls of every endpoint, interleaved (drift on a shared machine hits all alike); an endpoint
    stops early once its calls of this round took ``budget_s`` (after 3 calls at least)."""
    spent: dict[str, float] = {}
    for rep in range(reps):
        for endpoint, queries in plans:
            if rep >= 3 and spent.get(endpoint.name, 0.0) >= budget_s:
                continue
            q = queries[rep % len(queries)]
            timer.seconds, timer.calls = 0.0, 0
            start = time.perf_counter()
            endpoint.call(svc, site, q)
            elapsed = time.perf_counter() - start
            spent[endpoint.name] = spent.get(endpoint.name, 0.0) + elapsed
            record = out.setdefault(endpoint.name, {"total": [], "store": [], "calls": []})
            record["total"].append(elapsed)
            record["store"].append(timer.seconds)
            record["calls"].append(timer.calls)


# --- the server and the clients ----------------------------------------------------------------------
def port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # As gunicorn binds: connections of the previous run still in TIME-WAIT do not count.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def manage(env: Mapping[str, str], *argv: str) -> str:
    out = subprocess.run([PYTHON, "manage.py", *argv], env=dict(env), cwd=REPO, capture_output=True, text=True)
    if out.returncode != 0:
        raise BenchError(f"manage.py {argv[0]} failed:\n{out.stdout}{out.stderr}")
    return out.stdout


ISSUE_KEYS = """
from footfall.models import ApiKey, Site
site = Site.objects.get(site_id={site!r})
for i in range({n}):
    print("KEY", ApiKey.issue(site, f"api-bench-{{i}}", ["read"])[1])
"""


def prepare_django(env: Mapping[str, str], site: str, tz: str, keys: int) -> list[str]:
    """Migrate the private database, register the site, issue ``keys`` read keys (shown once)."""
    manage(env, "migrate", "--noinput", "-v", "0")
    manage(env, "create_site", site, "--domain", "bench.example", "--timezone", tz)
    out = manage(env, "shell", "-c", ISSUE_KEYS.format(site=site, n=keys))
    found = [line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("KEY ")]
    if len(found) != keys:
        raise BenchError(f"expected {keys} API keys, got {len(found)}:\n{out}")
    return found


@dataclass
class Plan:
    """What the clients ask: per endpoint, the concrete URLs (``refs``: one per top referrer)."""

    endpoints: list[Endpoint]
    urls: dict[str, list[str]]
    queries: dict[str, list[dict[str, str]]]


def make_plan(site: str, today: dt.date, top_refs: list[str], mix: list[Endpoint]) -> Plan:
    urls: dict[str, list[str]] = {}
    queries: dict[str, list[dict[str, str]]] = {}
    for endpoint in mix:
        base = endpoint.query(today)
        variants = top_refs if endpoint.refs else [""]
        urls[endpoint.name] = []
        queries[endpoint.name] = []
        for ref in variants:
            path = endpoint.path.replace("{ref}", urllib.parse.quote(ref, safe=""))
            urls[endpoint.name].append(f"/api/v1/sites/{site}/{path}?{urllib.parse.urlencode(base)}")
            queries[endpoint.name].append({**base, "_ref": ref} if endpoint.refs else base)
    return Plan(mix, urls, queries)


@dataclass
class LoadResult:
    latencies: dict[str, list[float]] = field(default_factory=dict)
    statuses: dict[str, dict[int, int]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    measured_s: float = 0.0


def client_loop(
    port: int, key: str, plan: Plan, seed: int, think_s: float, t_measure: float, t_end: float, result: LoadResult,
    lock: threading.Lock, timeout: float,
) -> None:  # fmt: skip
    rng = random.Random(seed)
    pool = urllib3.HTTPConnectionPool("127.0.0.1", port, maxsize=1, block=True, retries=False, timeout=timeout)
    headers = {"Authorization": f"Bearer {key}", "X-Forwarded-Proto": "https", "Accept": "application/json"}
    weights = [e.weight for e in plan.endpoints]
    mine: list[tuple[str, float, int]] = []
    try:
        while (now := time.monotonic()) < t_end:
            endpoint = rng.choices(plan.endpoints, weights=weights)[0]
            url = rng.choice(plan.urls[endpoint.name])
            start = time.perf_counter()
            try:
                resp = pool.request("GET", url, headers=headers, preload_content=True)
                status = resp.status
            except urllib3.exceptions.HTTPError as exc:
                status = 0
                with lock:
                    result.errors.append(f"{endpoint.name}: {exc}")
            elapsed = time.perf_counter() - start
            if now >= t_measure:
                mine.append((endpoint.name, elapsed, status))
                if status != 200 and status != 0:
                    with lock:
                        if len(result.errors) < 20:
                            result.errors.append(f"{endpoint.name}: HTTP {status} {resp.data[:200]!r}")
            if think_s:
                time.sleep(min(rng.expovariate(1 / think_s), max(0.0, t_end - time.monotonic())))
    finally:
        pool.close()
        with lock:
            for name, elapsed, status in mine:
                result.statuses.setdefault(name, {}).setdefault(status, 0)
                result.statuses[name][status] += 1
                if status == 200:
                    result.latencies.setdefault(name, []).append(elapsed)


def run_load(port: int, keys: list[str], plan: Plan, think_s: float, warmup: float, duration: float, seed: int,
             timeout: float) -> LoadResult:  # fmt: skip
    result, lock = LoadResult(), threading.Lock()
    t0 = time.monotonic()
    t_measure, t_end = t0 + warmup, t0 + warmup + duration
    threads = [
        threading.Thread(target=client_loop, args=(port, key, plan, seed * 1000 + i, think_s, t_measure, t_end,
                                                     result, lock, timeout), daemon=True)
        for i, key in enumerate(keys)
    ]  # fmt: skip
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=warmup + duration + timeout + 30)
    result.measured_s = duration  # requests started in it count, also those answered after it
    return result


# --- the run ----------------------------------------------------------------------------------------
def handle_signals() -> None:
    def handler(signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, handler)


def machine() -> dict[str, Any]:
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {"cpus": os.cpu_count(), "cpu_model": model, "python": platform.python_version(), "host": platform.node()}


def describe_sources(answer: dict[str, Any]) -> str:
    src = answer.get("sources", {})
    if "batch" not in src:
        return "realtime"
    parts = [f"batch {len(src['batch'].get('days', []))} d"]
    if src["realtime"]["buckets"]:
        parts.append(f"realtime {src['realtime']['buckets']} pieces")
    if src["missing"]["buckets"]:
        parts.append(f"MISSING {src['missing']['buckets']}")
    return ", ".join(parts)


def run(args: argparse.Namespace, cleanup: contextlib.ExitStack) -> dict[str, Any]:
    env = dict(os.environ)
    prefixes = [part.strip() for part in args.endpoints.split(",") if part.strip()]
    mix = [e for e in MIX if not prefixes or any(e.name.startswith(pre) for pre in prefixes)]
    if not mix:
        raise BenchError(f"--endpoints {args.endpoints!r} matches none of: {', '.join(e.name for e in MIX)}")
    cfg = load_config(env, REPO)
    if not env.get("MONGO_URL") or not env.get("REDIS_URL"):
        raise BenchError('no stack in the environment: eval "$(python -m deploy.local.stack env)" first')
    mongo, db = connect(cfg.mongo_url, cfg.mongo_db)
    cleanup.callback(mongo.close)
    rclient = redis.Redis.from_url(cfg.redis_url, socket_timeout=30, health_check_interval=30)
    rclient.ping()
    db.command("ping")
    layout = KeyLayout(retention_s=cfg.realtime_retention_s)
    store = CounterStore(rclient, layout)
    vocab = Vocabulary.build(args.seed, args.pages, args.referrers, args.pair_min)
    tz = ZoneInfo(args.tz)
    now = dt.datetime.now(dt.UTC)
    today = now.astimezone(tz).date()
    last_settled = today - dt.timedelta(days=args.unsettled + 1)
    days = [last_settled - dt.timedelta(days=i) for i in range(args.days)][::-1]

    site = args.reuse or f"apibench-{secrets.token_hex(3)}"
    seeding: dict[str, Any] = {"site": site, "reused": bool(args.reuse)}
    if not args.keep_data:
        cleanup.callback(lambda: (print(f"removing {site}'s documents and keys", flush=True),
                                  delete_site(db, rclient, site)))  # fmt: skip
    if args.reuse:
        print(f"reusing site {site} (no seeding)", flush=True)
    else:
        print(f"seeding site {site} ({args.tz}): {args.days} settled days up to {last_settled}, "
              f"~{args.events:,} page views in Redis", flush=True)  # fmt: skip
        t = time.monotonic()
        seeding["mongo_documents"] = seed_history(
            db, site, days, args.tz, vocab, args.daily_pageviews, args.seed, args.loader
        )
        seeding["mongo_s"] = round(time.monotonic() - t, 1)
        t = time.monotonic()
        end_ms = int(time.time() * 1000)
        start_ms = end_ms - (cfg.realtime_retention_s - 120) * 1000
        events = realtime_events(site, start_ms, end_ms, args.events, tz, vocab, args.seed)
        seeding["redis_events"] = seed_realtime(store, events, args.events)
        seeding["redis_s"] = round(time.monotonic() - t, 1)
        seeding["redis_keys"] = sum(1 for _ in rclient.scan_iter(match=f"{PREFIX}:{site}:*", count=10_000))
        print(f"  seeded: {seeding}", flush=True)
    # Which realtime reads this run measures: by hour from ``hours_from`` on, by minute before
    # (a stack that held an older worker's counters sets it ahead; see realtime.keys).
    raw_marker = rclient.get(layout.hours_from)
    hours_from = None if raw_marker is None else int(raw_marker)
    seeding["hours_from"] = (
        "never (by minute only)" if hours_from is None
        else "every hour" if hours_from == 0
        else dt.datetime.fromtimestamp(hours_from * 3600, dt.UTC).isoformat()
    )  # fmt: skip
    print(f"  realtime hour keys read from: {seeding['hours_from']}", flush=True)

    workdir = Path(tempfile.mkdtemp(prefix="ff-apibench-"))
    if not args.keep_workdir:
        cleanup.callback(shutil.rmtree, workdir, True)
    server_env = {k: v for k, v in env.items() if k not in {"DATABASE_URL", "FOOTFALL_ENV", "FOOTFALL_SPOOL_DIR"}}
    server_env.update(
        DJANGO_SETTINGS_MODULE="footfall.settings",
        DATABASE_URL=f"sqlite:///{workdir / 'bench.sqlite3'}",
        FOOTFALL_DATA_DIR=str(workdir / "data"),
        DEBUG="0",
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="127.0.0.1,localhost",
        FOOTFALL_API_RATE_PER_MINUTE="1000000",
        FOOTFALL_API_CACHE_ITEMS=str(args.cache_items),
        PYTHONUNBUFFERED="1",
    )
    print(f"preparing the Django database in {workdir}", flush=True)
    keys = prepare_django(server_env, site, args.tz, args.clients)
    port = args.port or (int(env["FOOTFALL_WEB_PORT"]) if env.get("FOOTFALL_WEB_PORT") else free_port())
    if not port_free(port):
        raise BenchError(f"port {port} is taken (--port to choose another)")
    gunicorn_args = [
        "--worker-class", "gthread", "--workers", str(args.workers), "--threads", str(args.threads),
        "--keep-alive", "10", "--timeout", str(args.timeout), "--log-level", "warning",
    ]  # fmt: skip
    server = Server("api", server_env, gunicorn_args, workdir / "gunicorn.log", port=port)
    cleanup.callback(server.stop)
    probe_pool = urllib3.HTTPConnectionPool("127.0.0.1", port, maxsize=1, retries=False, timeout=float(args.timeout))
    headers = {"Authorization": f"Bearer {keys[0]}", "X-Forwarded-Proto": "https"}

    def probe() -> bool:
        return probe_pool.request("GET", f"/api/v1/sites/{site}/realtime?minutes=1", headers=headers).status == 200

    print(f"starting gunicorn on 127.0.0.1:{port} ({args.workers} workers x {args.threads} threads)", flush=True)
    server.start(timeout=90.0, probe=probe)

    # Raw reads sum every trend block in Redis: no remembered baselines, as no settled cache.
    svc = QueryService(db, RealtimeQueries(store, baseline_memory_items=0), cfg.realtime_retention_s)
    info = SiteInfo(site, args.tz)
    top_refs = _top_refs(svc, info) if any(e.refs for e in mix) else []
    plan = make_plan(site, today, top_refs, mix)

    # Every URL once over HTTP: all must answer 200; what each one reads.
    checks: dict[str, str] = {}
    for endpoint in mix:
        for url in plan.urls[endpoint.name][:1]:
            resp = probe_pool.request("GET", url, headers=headers)
            if resp.status != 200:
                raise BenchError(f"{endpoint.name}: GET {url} answered {resp.status}: {resp.data[:300]!r}")
            checks[endpoint.name] = describe_sources(json.loads(resp.data))
    probe_pool.close()
    for name, text in checks.items():
        print(f"  {name:<26} {text}", flush=True)

    timer = StoreTimer()
    timer.install()
    cleanup.callback(timer.uninstall)
    plans = [(e, plan.queries[e.name]) for e in mix]
    raw: dict[str, dict[str, list[float]]] = {}
    raw_round(svc, info, plans, 1, timer, {})  # warm-up (connections, caches); not recorded
    first = args.raw_reps // 2
    print(f"raw, before the load: {first} x {len(mix)} service calls", flush=True)
    raw_round(svc, info, plans, first, timer, raw, args.raw_budget / 2)

    pids = {name: pid for name in ("redis", "mongo") if (pid := stack_pid(name, os.environ))}
    load_before = os.getloadavg()
    cpu0 = {"server": server.cpu_s(), **{n: group_seconds(pid) for n, pid in pids.items()}}
    self0 = resource.getrusage(resource.RUSAGE_SELF)
    print(f"load: {args.clients} clients, think {args.think_ms:g} ms, {args.warmup:g}s warm-up + "
          f"{args.duration:g}s", flush=True)  # fmt: skip
    load = run_load(port, keys, plan, args.think_ms / 1000, args.warmup, args.duration, args.seed, args.timeout)
    self1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu1 = {"server": server.cpu_s(), **{n: group_seconds(pid) for n, pid in pids.items()}}
    load_after = os.getloadavg()

    print(f"raw, after the load: {args.raw_reps - first} x {len(mix)} service calls", flush=True)
    raw_round(svc, info, plans, args.raw_reps - first, timer, raw, args.raw_budget / 2)
    timer.uninstall()

    # CPU counters cover warm-up and measured time alike: per request over all requests made.
    requests_measured = sum(sum(s.values()) for s in load.statuses.values())
    rate = requests_measured / load.measured_s if load.measured_s else 0.0
    requests_total = rate * (args.warmup + args.duration) if rate else 0
    cpu_per_request = {
        n: round((cpu1[n] - cpu0[n]) * 1000 / requests_total, 2) if requests_total else None for n in cpu0
    }
    client_cpu_s = (self1.ru_utime + self1.ru_stime) - (self0.ru_utime + self0.ru_stime)

    rows = []
    for endpoint in mix:
        under = summary(load.latencies.get(endpoint.name, []))
        r = raw.get(endpoint.name, {"total": [], "store": [], "calls": []})
        raw_s = summary(r["total"])
        store_s = summary(r["store"])
        ratio = under["p95_ms"] / raw_s["p95_ms"] if under["p95_ms"] and raw_s["p95_ms"] else None
        goal = endpoint.goal_ms()
        rows.append({
            "endpoint": endpoint.name,
            "kind": endpoint.kind,
            "urls": plan.urls[endpoint.name],
            "sources": checks.get(endpoint.name),
            "statuses": {str(k): v for k, v in sorted(load.statuses.get(endpoint.name, {}).items())},
            "load": under,
            "raw": raw_s,
            "raw_store_io": store_s,
            "raw_store_calls_median": percentile(r["calls"], 50),
            "ratio_p95": round(ratio, 2) if ratio else None,
            "goal_p95_ms": goal,
            "p95_ok": under["p95_ms"] is not None and under["p95_ms"] <= goal,
            "ratio_ok": ratio is not None and ratio <= GOALS["ratio"],
        })  # fmt: skip
    bad = {n: s for n, s in load.statuses.items() if set(s) - {200}}
    return {
        "when": now.isoformat(timespec="seconds"),
        "machine": machine(),
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in load_after],
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "goals": GOALS,
        "seeding": seeding,
        "settled_days": [days[0].isoformat(), days[-1].isoformat()],
        "today": today.isoformat(),
        "throughput_rps": round(rate, 1),
        "requests": requests_measured,
        "measured_s": round(load.measured_s, 1),
        "cpu_ms_per_request": cpu_per_request,
        "client_cpu_ms_per_request": round(client_cpu_s * 1000 / requests_total, 2) if requests_total else None,
        "errors": load.errors[:20],
        "non_200": bad,
        "endpoints": rows,
    }


def _top_refs(svc: QueryService, site: SiteInfo, n: int = 10) -> list[str]:
    """The busiest referrer domains of the last 30 days (what a user clicks through to)."""
    rng = p.parse_range({}, site.tz, svc.now(), dt.timedelta(days=30), p.MAX_RANGE)
    rows = svc.breakdown(site, "ref", rng, n + 1, 1, ("pageviews",))["results"]
    return [str(row["value"]) for row in rows if row["value"] != "(direct)"][:n]  # type: ignore[index]


def _fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def print_table(res: dict[str, Any]) -> None:
    head = (f"{'endpoint':<26} {'n':>5} {'p50':>7} {'p95':>7} {'p99':>7} │ {'raw p50':>7} {'raw p95':>7} "
            f"{'io p50':>7} │ {'p95/raw':>7} {'goal':>6}  verdict")  # fmt: skip
    print()
    print(f"API under load: {res['requests']:,} requests in {res['measured_s']}s = {res['throughput_rps']} req/s, "
          f"{res['settings']['clients']} clients, think {res['settings']['think_ms']:g} ms; load average "
          f"{res['loadavg_before'][0]} → {res['loadavg_after'][0]} on {res['machine']['cpus']} CPUs")  # fmt: skip
    print(f"CPU ms per request: {res['cpu_ms_per_request']} (bench client {res['client_cpu_ms_per_request']})")
    print(f"realtime hour keys read from: {res['seeding']['hours_from']}")
    cache = res["settings"]["cache_items"]
    print(f"server cache of settled reads: {f'{cache:,} items per worker' if cache else 'off'}; "
          "raw calls: uncached, no remembered trend baselines")  # fmt: skip
    print("times in ms; load = client-side under load, raw = same QueryService call in-process, io = its store I/O")
    print(head)
    print("─" * len(head))
    for row in res["endpoints"]:
        lo, raw, io = row["load"], row["raw"], row["raw_store_io"]
        if lo["n"]:
            verdict = ["p95 ok" if row["p95_ok"] else "p95 FAIL", "ratio ok" if row["ratio_ok"] else "ratio FAIL"]
        else:
            verdict = ["FAIL: no answer started and finished in the measured time"]
        print(f"{row['endpoint']:<26} {lo['n']:>5} {_fmt(lo['p50_ms']):>7} {_fmt(lo['p95_ms']):>7} "
              f"{_fmt(lo['p99_ms']):>7} │ {_fmt(raw['p50_ms']):>7} {_fmt(raw['p95_ms']):>7} {_fmt(io['p50_ms']):>7} │ "
              f"{_fmt(row['ratio_p95'], 2):>7} {row['goal_p95_ms']:>6.0f}  {', '.join(verdict)}")  # fmt: skip
    if res["non_200"] or res["errors"]:
        print(f"\nNOT 200: {res['non_200']}; errors: {res['errors'][:5]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=24, help="concurrent client threads (one API key each)")
    parser.add_argument("--think-ms", type=float, default=2000.0, help="mean think time between a client's requests")
    # 180 s: ~65 requests of the rarest endpoints at the default load, so a p95 is not just
    # the third-slowest of a few dozen.
    parser.add_argument("--duration", type=float, default=180.0, help="measured seconds of load")
    parser.add_argument("--warmup", type=float, default=10.0, help="seconds of load before measuring")
    parser.add_argument(
        "--raw-reps", type=int, default=40, help="in-process calls per endpoint (half before, half after)"
    )
    parser.add_argument("--raw-budget", type=float, default=60.0, help="seconds of raw calls per endpoint, at most")
    parser.add_argument("--timeout", type=int, default=120, help="gunicorn's worker timeout and the clients' (s)")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--threads", type=int, default=4, help="gunicorn threads per worker")
    parser.add_argument(
        "--cache-items",
        type=int,
        default=200_000,
        help="the server's cache of settled reads (FOOTFALL_API_CACHE_ITEMS); 0: off. Raw calls never use it",
    )
    parser.add_argument("--port", type=int, default=0, help="gunicorn's port (default $FOOTFALL_WEB_PORT, else free)")
    parser.add_argument("--days", type=int, default=90, help="settled days in Mongo")
    parser.add_argument("--unsettled", type=int, default=1, help="local days before today not rolled up yet")
    parser.add_argument("--daily-pageviews", type=int, default=150_000, help="page views of a settled weekday")
    parser.add_argument("--events", type=int, default=300_000, help="page views in the Redis counters")
    parser.add_argument(
        "--loader",
        choices=("insert", "load_day"),
        default="insert",
        help="insert: the documents load_day writes, by plain inserts (faster); load_day: the real loader",
    )
    parser.add_argument(
        "--endpoints", default="", help="comma-separated name prefixes: only these endpoints of the mix (default all)"
    )
    parser.add_argument("--pages", type=int, default=200, help="distinct pages of the site")
    parser.add_argument("--referrers", type=int, default=50, help="distinct referrer domains (plus direct)")
    parser.add_argument("--pair-min", type=int, default=2, help="fewest daily views of a referrer→page document")
    parser.add_argument("--tz", default="Europe/Berlin", help="the site's time zone")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--reuse",
        metavar="SITE",
        help="use a site seeded by an earlier --keep-data run (within minutes: its realtime events end at seeding)",
    )
    parser.add_argument("--keep-data", action="store_true", help="leave the site's documents and keys in place")
    parser.add_argument("--keep-workdir", action="store_true", help="keep the SQLite database and gunicorn log")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    handle_signals()
    try:
        with contextlib.ExitStack() as cleanup:
            res = run(args, cleanup)
    except BenchError as exc:
        print(f"benchmark failed: {exc}", file=sys.stderr)
        return 1
    print_table(res)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=2, default=str) + "\n")
    print(f"\nwrote {args.out}")
    return 1 if res["non_200"] or res["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
