"""Referrers that are not web URLs, from the collector through Kafka to both layers: the realtime
counters and the rollup give the same labels and counts in breakdowns and referrer -> page flows."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import uuid
from collections import Counter
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
import redis
from django.test import Client
from pyspark.sql import SparkSession

from collector.runtime import get_ingestor
from footfall.config import Config
from footfall.models import Site
from footfall_capture.events import decode
from historical.buckets import local_midnight
from historical.reads import RollupReads
from historical.store import connect
from query.params import Range
from query.service import QueryService, QuerySite
from realtime.keys import KeyLayout
from realtime.reads import RealtimeQueries
from realtime.store import CounterStore
from tests.integration.api.test_clock_change_days import archive, roll_up
from tests.integration.kafka_tail import TopicTail

CHROME = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
)
# referrer sent -> label expected in the referrer breakdown, and how many page views each
SENT = {
    "android-app://com.google.android.gm/": ("mail.google.com", 3),  # a known app keeps its mapping
    "android-app://com.example.chat/": ("com.example.chat", 2),  # another app: its package id
    "about:blank": ("(unknown)", 2),  # names no host or app
    "not a url": ("(unknown)", 1),
    None: ("(direct)", 2),  # no referrer at all
    "https://news.ycombinator.com/item?id=1": ("news.ycombinator.com", 1),
}


@pytest.mark.django_db
def test_app_and_unparseable_referrers_agree_in_both_layers(cfg: Config, tmp_path: Path, spark: SparkSession) -> None:
    """Beacons through POST /collect; the events counted in Redis, then rolled up: the referrer
    breakdown, the referrer -> page flows and the referrer-type breakdown are the same from both."""
    site = Site.objects.create(site_id=f"r-{uuid.uuid4().hex[:10]}", name="Referrers", domains=["example.com"])
    get_ingestor().sites.invalidate()
    tail = TopicTail(cfg, cfg.events_topic)
    client = Client()
    sent = 0
    for referrer, (_, count) in SENT.items():
        for n in range(count):
            body = {"site_id": site.site_id, "url": f"https://example.com/p{n}", "referrer": referrer}
            resp = client.post("/collect", json.dumps(body).encode(), content_type="text/plain",
                               REMOTE_ADDR=f"81.2.69.{160 + sent}", HTTP_USER_AGENT=CHROME)  # fmt: skip
            assert resp.status_code == 202, resp.content
            sent += 1
    try:
        messages = tail.read(lambda m: decode(m.value()).site_id == site.site_id, sent)
    finally:
        tail.close()
    events = [decode(m.value()) for m in messages]
    assert len(events) == sent

    want = Counter()
    for label, count in SENT.values():
        want[label] += count
    cfg = dataclasses.replace(cfg, archive_url=(tmp_path / "archive").as_uri())
    layout = KeyLayout(retention_s=cfg.realtime_retention_s)
    store = CounterStore(redis.Redis.from_url(cfg.redis_url), layout)
    now = dt.datetime.now(dt.UTC)
    store.apply(events, now_ms=int(now.timestamp() * 1000))
    archive(cfg, events)
    mongo, db = connect(cfg.mongo_url, cfg.mongo_db)
    service = QueryService(RollupReads(db), RealtimeQueries(store), cfg.realtime_retention_s, now=lambda: now)
    utc = ZoneInfo("UTC")
    days = sorted({dt.datetime.fromtimestamp(e.ts / 1000, dt.UTC).date() for e in events})
    rng = Range(local_midnight(days[0], utc), local_midnight(days[-1] + dt.timedelta(days=1), utc), utc)
    info = QuerySite(site.site_id, "UTC")

    def answers() -> tuple[dict, dict, dict, set[str]]:
        refs = service.breakdown(info, "ref", rng, 100, 1, ("pageviews",))
        types = service.breakdown(info, "ref_type", rng, 100, 1, ("pageviews",))
        unknown = service.breakdown(info, "refpage", rng, 100, 1, ("pageviews",), ref="(unknown)")
        sources = {p for body in (refs, types, unknown) for p in ("batch", "realtime") if body["sources"][p]["buckets"]}
        return (
            {r["value"]: r["pageviews"] for r in refs["results"]},
            {r["value"]: r["pageviews"] for r in types["results"]},
            {r["value"]: r["pageviews"] for r in unknown["results"]},
            sources,
        )

    try:
        realtime = answers()
        assert realtime[3] == {"realtime"}
        assert realtime[0] == dict(want)
        assert realtime[1] == {"email": 3, "other": 5, "social": 1, "direct": 2}
        assert realtime[2] == {"/p0": 2, "/p1": 1}
        roll_up(spark, cfg, {site.site_id: "UTC"}, [d.isoformat() for d in days])
        batch = answers()
        assert batch[3] == {"batch"}
        assert batch[:3] == realtime[:3]
    finally:
        mongo.close()
        for key in store.client.scan_iter(match=layout.site_pattern(site.site_id), count=1000):
            store.client.delete(key)
