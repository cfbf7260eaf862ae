"""Referrer spam, end to end: 2,000 page views in one minute, each from a new referrer URL on
a new host, sent through the collector's batch API to Kafka and counted by a realtime worker
into Redis (default caps: 1,000 values per dimension a minute). Then the realtime API, the
Live page, the breakdowns and both CSV exports answer, and their totals are exact: the
1,000 referrers past the cap are one ``(other)`` row."""

from __future__ import annotations

import csv
import io
import json
import threading
import time
import uuid
from urllib.parse import urlsplit

import pytest
import redis
from confluent_kafka import Consumer, KafkaException, TopicPartition
from django.contrib.auth import get_user_model
from django.test import Client

from collector.runtime import get_ingestor
from dashboard.live import OUTPUTS as LIVE_OUTPUTS
from dashboard.models import SiteAccess
from footfall.config import Config
from footfall.kafka_client import consumer_config
from footfall.models import ApiKey, Site
from footfall.vocabulary import MINUTE_VALUES, VALUE_OTHER
from query.runtime import get_service
from query.service import REALTIME_TOP
from realtime.consumer import build_processor
from realtime.keys import KeyLayout
from realtime.reads import RealtimeQueries
from realtime.store import CounterStore
from tests.integration.api.conftest import SiteKey
from tests.integration.dash_callbacks import post_callback

SPAM = 2 * MINUTE_VALUES
PAGES = ("/", "/pricing", "/blog", "/docs", "/about")
SPAM_DB = 11  # a Redis database of its own: this worker counts only from the topic's end, into here


@pytest.fixture
def spam_store(cfg: Config) -> CounterStore:
    client = redis.Redis.from_url(urlsplit(cfg.redis_url)._replace(path=f"/{SPAM_DB}").geturl())
    client.flushdb()
    return CounterStore([client], KeyLayout(retention_s=cfg.realtime_retention_s))


def start_at_the_end(cfg: Config, group: str) -> None:
    """Commit ``group``'s offsets at the events topic's end: its worker counts only what comes next."""
    consumer = Consumer(consumer_config(cfg, group))
    topic = cfg.events_topic
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        ends = [
            TopicPartition(topic, p, consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1])
            for p in partitions
        ]
        deadline = time.monotonic() + 30
        while True:  # a new group's coordinator takes a moment to be found ("Not coordinator")
            try:
                consumer.commit(offsets=ends, asynchronous=False)
                break
            except KafkaException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    finally:
        consumer.close()


@pytest.mark.django_db
def test_referrer_spam_in_one_minute_leaves_every_view_answering_exactly(
    cfg: Config, spam_store: CounterStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = Site.objects.create(site_id=f"spam-{uuid.uuid4().hex[:8]}", name="Spammed", domains=["site.example"],
                               timezone="UTC")  # fmt: skip
    get_ingestor().sites.invalidate()
    _, ingest_key = ApiKey.issue(site, "ingest", ["ingest"])
    _, read_key = ApiKey.issue(site, "read", ["read"])
    reader = SiteKey(site, read_key)
    monkeypatch.setattr(get_service(), "rt", RealtimeQueries(spam_store))
    group = f"spam-{uuid.uuid4().hex[:8]}"
    start_at_the_end(cfg, group)

    now_ms = int(time.time() * 1000)
    minute = (now_ms // 60_000 - 1) * 60_000  # the whole previous minute
    spam = [
        {"site_id": site.site_id, "url": f"https://site.example{PAGES[i % len(PAGES)]}", "ts": minute + i * 25,
         "referrer": f"https://spam-{i}.example/offer-{i}", "ip": f"203.0.113.{i % 250}",
         "user_agent": f"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/131.0.{i}.0 Safari/537.36"}
        for i in range(SPAM)
    ]  # fmt: skip
    api = Client()
    for start in range(0, SPAM, 1000):
        response = api.post(f"/api/v1/sites/{site.site_id}/events", json.dumps(spam[start : start + 1000]),
                            content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {ingest_key}")  # fmt: skip
        assert response.status_code == 202, response.content[:300]
        assert all(r["status"] == "queued" for r in response.json()["results"]), response.content[:300]
    assert get_ingestor().sink.flush(30) == 0

    worker = build_processor(cfg, spam_store, group, cfg.events_topic, max_batch_size=1000, max_batch_time=0.3)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 120
        while RealtimeQueries(spam_store).totals(site.site_id, minute, minute + 60_000)["pageviews"] < SPAM:
            assert time.monotonic() < deadline, "the worker did not count the spam within 120 s"
            time.sleep(0.2)
    finally:
        worker.signal_shutdown()
        thread.join(30)

    # The realtime API: exact totals, and the referrers past the cap as one (other) row.
    live = reader.get(api, "realtime", minutes=10, limit=10)
    assert live.status_code == 200, live.content[:300]
    live = live.json()
    assert live["pageviews"] == SPAM
    refs = {r["value"]: r["pageviews"] for r in live["top_referrers"]}
    assert refs[VALUE_OTHER] == SPAM - MINUTE_VALUES
    assert {f["referrer"]: f["pageviews"] for f in live["flows"]}[VALUE_OTHER] == SPAM - MINUTE_VALUES
    assert sum(r["pageviews"] for r in live["top_pages"]) == SPAM

    # The Live page, as the browser asks for it.
    account = get_user_model().objects.create_user(f"u-{uuid.uuid4().hex[:6]}")
    SiteAccess.objects.create(user=account, site=site)
    browser = Client()
    browser.force_login(account)
    inputs = [("live-tick", "n_intervals", 1), ("site", "value", site.site_id), ("live-minutes", "value", 30)]
    shown = post_callback(browser, [(o.component_id, o.component_property) for o in LIVE_OUTPUTS], inputs)
    assert shown["live-error"]["hidden"] is True
    assert shown["live-pageviews"]["children"] == f"{SPAM:,}"
    assert {"value": "other values", "pageviews": SPAM - MINUTE_VALUES} in [
        {k: r[k] for k in ("value", "pageviews")} for r in shown["live-top-refs"]["data"]
    ]
    assert shown["live-other-note"]["hidden"] is False

    # Breakdowns, page by page, and their CSV: every referrer, (other) included, adds up.
    today = {"from": f"{time.strftime('%Y-%m-%d', time.gmtime(minute / 1000))}"}
    for dim in ("referrers", "referrer_urls", "pages"):
        total, rows, page = 0, 0, 1
        while True:
            body = reader.get(api, f"breakdown/{dim}", limit=1000, page=page, **today)
            assert body.status_code == 200, body.content[:300]
            body = body.json()
            total += sum(r["pageviews"] for r in body["results"])
            rows += len(body["results"])
            table = reader.get(api, f"breakdown/{dim}", limit=1000, page=page, format="csv", **today)
            assert table.status_code == 200
            assert sum(int(r["pageviews"]) for r in csv.DictReader(io.StringIO(table.content.decode()))) == sum(
                r["pageviews"] for r in body["results"]
            )
            if page * 1000 >= body["total"]:
                break
            page += 1
        assert total == SPAM, dim
        # 1,000 referrers kept their places and (other) holds the rest; a realtime period gives its
        # top REALTIME_TOP values and counts the rest under (other) too.
        assert rows == (len(PAGES) if dim == "pages" else min(MINUTE_VALUES + 1, REALTIME_TOP)), dim

    # The dashboard's Download CSV of the referrers table: every row, adding up.
    day = time.strftime("%Y-%m-%d", time.gmtime(minute / 1000))
    store = {"site": site.site_id, "first": day, "last": day, "compare": False, "notes": []}
    download = post_callback(browser, [("hist-csv", "data")], [("hist-csv-button", "n_clicks", 1)],
                    [("hist-range", "data", store), ("hist-dim", "value", "referrers"), ("hist-filter", "data", None),
                     ("hist-goal-filter", "data", None)])  # fmt: skip
    rows = list(csv.DictReader(io.StringIO(download["hist-csv"]["data"]["content"])))
    assert len(rows) == min(MINUTE_VALUES + 1, REALTIME_TOP)
    assert sum(int(r["pageviews"]) for r in rows) == SPAM
    assert {r["value"]: int(r["pageviews"]) for r in rows}[VALUE_OTHER] >= SPAM - MINUTE_VALUES
