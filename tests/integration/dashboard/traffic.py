"""Generated traffic for the dashboard tests, put into the real stores.

Events go through the real realtime path (Kafka topic → ``realtime.consumer`` processor →
Redis). One past day is settled in Mongo with :func:`historical.store.load_day` from a
small in-test rollup of the same events (the real Spark job takes minutes on this machine;
its own tests cover it), then :func:`query.reconcile.reconcile_day` records the drift.
"""

from __future__ import annotations

import datetime as dt
import functools
import random
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from zoneinfo import ZoneInfo

import msgspec
import redis
from confluent_kafka import Consumer, TopicPartition
from pymongo.database import Database

from footfall.config import Config
from footfall.demo import DemoTraffic
from footfall.kafka_client import consumer_config
from footfall.vocabulary import ref_label
from footfall_capture.events import Event
from historical.buckets import day_buckets
from historical.reads import RollupReads
from historical.store import (
    BREAKDOWNS,
    DAILY,
    HOURLY,
    RECONCILIATION,
    RUNS,
    DayDocuments,
    hour_document,
    load_day,
    record_reconciliation,
)
from query.reconcile import reconcile_day
from realtime.consumer import build_processor
from realtime.keys import KeyLayout
from realtime.reads import RealtimeQueries
from realtime.store import CounterStore
from tests.integration.kafka_tail import produce

SURGE_PATH = "/blog/launch-day"
SESSION_GAP_MS = 30 * 60 * 1000
XSS_MARK = "__footfallXss"
# Each payload tries to run script where the value could end up: HTML text, attributes,
# Plotly labels (which render a subset of HTML) and links.
XSS_PATHS = [
    f"/<script>window.{XSS_MARK}=1</script>",
    f'/"><img src=x onerror="window.{XSS_MARK}=2;alert(2)">',
    f'/<a href="javascript:window.{XSS_MARK}=3">click</a>',
]
XSS_REFERRERS = [
    (f"javascript:window.{XSS_MARK}=4;alert(4)", f"javascript:window.{XSS_MARK}=4"),
    (f"https://evil.example/<svg onload=window.{XSS_MARK}=5>", f"<svg/onload=window.{XSS_MARK}=5>.example"),
]
XSS_TITLE = f"<script>window.{XSS_MARK}=6;alert(6)</script>"


def history_and_live(site: str, tz: str, now: dt.datetime, seed: int = 11) -> tuple[list[Event], list[str]]:
    """Page views from the start of the day before yesterday (site time) until now, a surge
    on one page in the last minutes (for the rising list), and a few duplicates."""
    zone = ZoneInfo(tz)
    today = now.astimezone(zone).date()
    days = [(today - dt.timedelta(days=n)).isoformat() for n in (2, 1, 0)]
    start = int(dt.datetime.combine(today - dt.timedelta(days=2), dt.time(), zone).timestamp() * 1000)
    now_ms = int(now.timestamp() * 1000)
    gen = DemoTraffic(site_id=site, visitors=300, seed=seed)
    rng = random.Random(seed)
    stamps = sorted(rng.randrange(start, now_ms - 40 * 60_000) for _ in range(1200))
    stamps += sorted(rng.randrange(now_ms - 20 * 60_000, now_ms - 20_000) for _ in range(300))
    events = [gen.event(ts) for ts in stamps]
    for _ in range(45):  # a page nobody visited before, suddenly popular
        base = gen.event(rng.randrange(now_ms - 8 * 60_000, now_ms - 20_000))
        events.append(msgspec.structs.replace(base, path=SURGE_PATH, url=f"https://{base.host}{SURGE_PATH}"))
    events += rng.sample(events, 30)  # redelivered: counted once
    return events, days


def xss_events(site: str, now: dt.datetime) -> list[Event]:
    """Page views whose URL, path, title and referrer carry script payloads, in the live window."""
    gen = DemoTraffic(site_id=site, visitors=20, seed=5)
    now_ms = int(now.timestamp() * 1000)
    events = []
    for i in range(60):
        base = gen.event(now_ms - 60_000 - i * 10_000)
        path = XSS_PATHS[i % len(XSS_PATHS)]
        referrer, domain = XSS_REFERRERS[i % len(XSS_REFERRERS)]
        events.append(
            msgspec.structs.replace(
                base, url=f"https://{base.host}{path}", path=path, title=XSS_TITLE, referrer=referrer,
                ref_domain=domain, ref_type="other",
            )
        )  # fmt: skip
    return events


def end_offsets(cfg: Config, topic: str) -> dict[int, int]:
    consumer = Consumer(consumer_config(cfg, f"probe-{topic}"))
    try:
        meta = consumer.list_topics(topic, timeout=10).topics[topic]
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in meta.partitions}
    finally:
        consumer.close()


def count_realtime(cfg: Config, topic: str, events: Sequence[Event], timeout: float = 120) -> None:
    """Produce ``events`` to ``topic`` and run the realtime consumer until it has counted them."""
    produce(cfg, topic, events)
    ends = end_offsets(cfg, topic)
    store = CounterStore(redis.Redis.from_url(cfg.redis_url), KeyLayout(retention_s=cfg.realtime_retention_s))
    group = f"dash-rt-{topic}"
    processor = build_processor(cfg, store, group, topic, max_batch_size=1000, max_batch_time=0.3)
    thread = threading.Thread(target=processor.run, name="dashboard-test-realtime", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    try:
        while True:
            recorded = store.client.hgetall(store.layout.offsets(group))
            got = {int(k.decode().rsplit(":", 1)[1]): int(v) for k, v in recorded.items()
                   if k.decode().startswith(f"{topic}:")}  # fmt: skip
            if all(got.get(p, 0) >= end for p, end in ends.items() if end > 0):
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"the realtime consumer did not reach {ends} on {topic} within {timeout}s")
            time.sleep(0.3)
    finally:
        processor.signal_shutdown()
        thread.join(30)


def _local(ts: int, zone: ZoneInfo) -> dt.datetime:
    return dt.datetime.fromtimestamp(ts / 1000, zone)


def settle_day(cfg: Config, db: Database, site: str, tz: str, day: str, events: Iterable[Event]) -> None:
    """Load a rollup of ``day`` (site time) computed from ``events`` and record its drift."""
    zone = ZoneInfo(tz)
    on_day = {e.event_id: e for e in events if e.type == "pageview" and _local(e.ts, zone).date().isoformat() == day}
    views = sorted(on_day.values(), key=lambda e: e.ts)
    by_visitor: dict[str, list[Event]] = defaultdict(list)
    for e in views:
        by_visitor[e.visitor_id or ""].append(e)
    sessions = []  # (entry page, page views, duration s)
    for visits in by_visitor.values():
        start = prev = visits[0]
        count = 0
        for e in visits:
            if e.ts - prev.ts > SESSION_GAP_MS:
                sessions.append((start.path, count, (prev.ts - start.ts) / 1000))
                start, count = e, 0
            count += 1
            prev = e
        sessions.append((start.path, count, (prev.ts - start.ts) / 1000))
    bounces = sum(1 for s in sessions if s[1] == 1)
    daily = {
        "pageviews": len(views), "visitors": len(by_visitor), "events": len(views), "bot_events": 0,
        "custom_events": 0, "sessions": len(sessions), "bounces": bounces,
        "bounce_rate": round(bounces / len(sessions), 6) if sessions else None,
        "visit_duration_s": sum(s[2] for s in sessions) / len(sessions) if sessions else None,
    }  # fmt: skip
    hourly = []
    for bucket in day_buckets(dt.date.fromisoformat(day), zone):
        hv = [e for e in views if bucket.start_ms <= e.ts < bucket.end_ms]
        counts = {"pageviews": len(hv), "visitors": len({e.visitor_id for e in hv}), "sessions": 0}
        hourly.append({**hour_document(day, tz, bucket.start_ms), **counts})
    values: dict[tuple[str, str, str | None, str | None], list[Event]] = defaultdict(list)
    for e in views:
        ref = ref_label(e.ref_domain, e.referrer)
        for dim, value in (("page", e.path), ("ref", ref), ("refurl", e.referrer), ("ref_type", e.ref_type),
                           ("browser", e.ua and e.ua.browser), ("os", e.ua and e.ua.os),
                           ("device", e.ua and e.ua.device), ("country", e.country),
                           ("utm_source", e.utm and e.utm.source), ("utm_medium", e.utm and e.utm.medium),
                           ("utm_campaign", e.utm and e.utm.campaign)):  # fmt: skip
            if value:
                values[(dim, value, None, None)].append(e)
        values[("refpage", f"{ref}\x1f{e.path}", ref, e.path)].append(e)
    breakdowns = [
        {"dimension": dim, "value": value, "ref": ref, "page": page, "pageviews": len(evs),
         "visitors": len({e.visitor_id for e in evs}), "sessions": None, "bounces": None, "visit_duration_s": None}
        for (dim, value, ref, page), evs in values.items()
    ]  # fmt: skip
    entries: dict[str, list[tuple[str, int, float]]] = defaultdict(list)
    for s in sessions:
        entries[s[0]].append(s)
    for page, ss in entries.items():
        breakdowns.append({
            "dimension": "entry_page", "value": page, "ref": None, "page": None,
            "pageviews": sum(s[1] for s in ss), "visitors": len(ss), "sessions": len(ss),
            "bounces": sum(1 for s in ss if s[1] == 1), "visit_duration_s": sum(s[2] for s in ss) / len(ss),
        })  # fmt: skip
    run = {"status": "complete", "events_read": len(views), "pageviews": len(views), "tz": tz,
           "computed_at": dt.datetime.now(dt.UTC), "spark_master": "test (in-process rollup)"}  # fmt: skip
    load_day(db, DayDocuments(site, day, daily, hourly, breakdowns, run))
    store = CounterStore(redis.Redis.from_url(cfg.redis_url), KeyLayout(retention_s=cfg.realtime_retention_s))
    record = functools.partial(record_reconciliation, db)
    reconcile_day(RollupReads(db), RealtimeQueries(store), record, site, day, tz, retention_s=cfg.realtime_retention_s)


def forget(db: Database, sites: Iterable[str]) -> None:
    """Remove the test sites' rollup documents."""
    for name in (DAILY, HOURLY, BREAKDOWNS, RUNS, RECONCILIATION):
        db[name].delete_many({"site_id": {"$in": list(sites)}})


def distinct_pageviews(events: Iterable[Event]) -> Counter:
    return Counter(e.path for e in {e.event_id: e for e in events}.values() if e.type == "pageview")
