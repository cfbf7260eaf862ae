"""The lambda merge, end to end: events → Kafka → realtime workers (Redis) and archiver →
Spark rollup (Mongo); the API over a range spanning settled days and today equals the exact
truth of the generated traffic, before and after the watermark moves."""

from __future__ import annotations

import datetime as dt
import random
import threading
from collections import Counter
from urllib.parse import quote
from zoneinfo import ZoneInfo

import msgspec
import pytest
import redis
from confluent_kafka import Consumer, TopicPartition
from django.test import Client
from pyspark.sql import SparkSession

from footfall.config import Config
from footfall.demo import DemoTraffic
from footfall.kafka_client import consumer_config
from footfall.models import Funnel, Goal, Site
from footfall.vocabulary import ref_label
from footfall_capture.events import Event
from query.runtime import get_service
from query.service import PREVIOUS_PARTIAL
from realtime.consumer import build_processor
from realtime.keys import KeyLayout
from realtime.store import CounterStore
from tests.integration.api.conftest import SiteKey
from tests.integration.api.goal_source_truth import check_goal_sources
from tests.integration.api.report_truth import FUNNELS, GOALS, check_reports, distinct_humans, with_reports
from tests.integration.batch.test_rollup_e2e import archive_topic
from tests.integration.batch.truth import exact, local_day
from tests.integration.kafka_tail import produce
from tests.integration.realtime.conftest import wait_consumed
from tests.spark_session import roll_up_in_session

TZ = "America/New_York"
HLL_TOLERANCE = 0.03  # three standard errors of Redis's HyperLogLog


def traffic(site: str, now: dt.datetime) -> tuple[list[Event], list[str]]:
    """Page views from the start of the day before yesterday (site time) until a minute ago,
    5 % of them sent twice."""
    tz = ZoneInfo(TZ)
    today = now.astimezone(tz).date()
    days = [(today - dt.timedelta(days=n)).isoformat() for n in (2, 1, 0)]
    start = int(dt.datetime.combine(today - dt.timedelta(days=2), dt.time(), tz).timestamp() * 1000)
    end = int(now.timestamp() * 1000) - 60_000
    gen = DemoTraffic(site_id=site, visitors=400, seed=7)
    rng = random.Random(3)
    events = [gen.event(ts, received_at_ms=ts + rng.randrange(3000)) for ts in sorted(
        rng.randrange(start, end) for _ in range(4000))]  # fmt: skip
    for i, event in enumerate(events):
        if i % 29 == 0:  # a few custom events, which are not page views
            events[i] = msgspec.structs.replace(event, type="signup", url=None, path=None, props={"plan": "pro"})
    # Engagement reports and sign-ups after pricing page views (goals, funnels, engaged time),
    # only those before now: the realtime counters take nothing from the future.
    events += [e for e in with_reports([e for e in events if e.type == "pageview"], rng) if e.ts < end]
    events += rng.sample(events, len(events) // 20)
    rng.shuffle(events)
    return events, days


def run_realtime(cfg: Config, topic: str, ends: dict[int, int]) -> None:
    store = CounterStore(redis.Redis.from_url(cfg.redis_url), KeyLayout(retention_s=cfg.realtime_retention_s))
    group = f"api-rt-{topic}"
    processor = build_processor(cfg, store, group, topic, max_batch_size=1000, max_batch_time=0.3)
    thread = threading.Thread(target=processor.run, daemon=True)
    thread.start()
    try:
        wait_consumed(store, group, topic, ends, timeout=240)
    finally:
        processor.signal_shutdown()
        thread.join(30)


def end_offsets(cfg: Config, topic: str) -> dict[int, int]:
    consumer = Consumer(consumer_config(cfg, f"probe-{topic}"))
    meta = consumer.list_topics(topic, timeout=10).topics[topic]
    ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in meta.partitions}
    consumer.close()
    return ends


def within_hll(got: int, want: int) -> bool:
    return abs(got - want) <= max(2, want * HLL_TOLERANCE)


def check_against_truth(client: Client, sk: SiteKey, events: list[Event], days: list[str], settled: list[str]) -> None:
    truth = exact(events, TZ, set(days))
    start = days[0]
    # Daily series: settled days from Mongo (exact visitors), the rest from Redis (HLL).
    for metric in ("pageviews", "visitors"):
        body = sk.get(client, "timeseries", metric=metric, interval="day", **{"from": start}).json()
        points = {p["t"][:10]: p for p in body["points"]}
        assert list(points) == days
        for day in days:
            point, want = points[day], truth[day][metric]
            assert point["source"] == ("batch" if day in settled else "realtime"), (day, point)
            if metric == "pageviews" or day in settled:
                assert point["value"] == want, (metric, day)
            else:
                assert within_hll(point["value"], want), (day, point["value"], want)
        assert body["sources"]["batch"]["days"] == settled
        assert body["sources"]["watermark"] == (settled[-1] if settled else None)
        assert body["sources"]["missing"]["buckets"] == 0

    # Hourly page views over the whole span: every hour bucket equals the truth.
    distinct = {e.event_id: e for e in events}.values()
    tz = ZoneInfo(TZ)
    per_hour = Counter(
        dt.datetime.fromtimestamp(e.ts / 1000, tz).replace(minute=0, second=0, microsecond=0).isoformat()
        for e in distinct if e.type == "pageview" and not (e.ua and e.ua.is_bot)
    )  # fmt: skip
    body = sk.get(client, "timeseries", metric="pageviews", interval="hour", **{"from": start}).json()
    got = {p["t"]: p["value"] for p in body["points"] if p["value"]}
    assert got == dict(per_hour)

    # Totals: page views exact; visitors are per-day counts summed (ids rotate daily).
    body = sk.get(client, "aggregate", compare="previous_period", **{"from": start}).json()
    assert body["results"]["pageviews"]["value"] == sum(truth[d]["pageviews"] for d in days)
    # The days before the traffic are neither settled nor inside the realtime window: unknown, not 0.
    for metric in ("pageviews", "visitors", "sessions"):
        assert body["results"][metric]["previous"] is None, metric
        assert body["results"][metric]["change"] is None, metric
    assert PREVIOUS_PARTIAL in body["sources"]["notes"]
    want_visitors = sum(truth[d]["visitors"] for d in days)
    assert within_hll(body["results"]["visitors"]["value"], want_visitors)
    assert any("sum of per-day counts" in note for note in body["sources"]["notes"])

    # Breakdowns merge both layers exactly.
    pages: Counter = Counter()
    refs: Counter = Counter()
    for d in days:
        pages.update(truth[d]["pages"])
        refs.update(truth[d]["refs"])
    body = sk.get(client, "breakdown/pages", limit=1000, **{"from": start}).json()
    assert {r["value"]: r["pageviews"] for r in body["results"]} == dict(pages)
    assert body["total"] == len(pages)
    body = sk.get(client, "breakdown/referrers", limit=1000, **{"from": start}).json()
    assert {r["value"]: r["pageviews"] for r in body["results"]} == dict(refs)

    # Which pages the top referrer drives traffic to, and back.
    top_ref = refs.most_common(1)[0][0]
    flows = Counter(
        e.path for e in distinct
        if e.type == "pageview" and not (e.ua and e.ua.is_bot) and ref_label(e.ref_domain, e.referrer) == top_ref
        and local_day(e.ts, TZ) in days
    )  # fmt: skip
    body = sk.get(client, f"referrers/{top_ref}/pages", limit=1000, **{"from": start}).json()
    assert {r["value"]: r["pageviews"] for r in body["results"]} == dict(flows)
    top_page = pages.most_common(1)[0][0]
    # The path is URL-encoded, so the root page "/" works as well as "/blog/post".
    body = sk.get(client, f"pages/{quote(top_page, safe='')}/referrers", limit=1000, **{"from": start}).json()
    want = Counter(
        ref_label(e.ref_domain, e.referrer) for e in distinct
        if e.type == "pageview" and not (e.ua and e.ua.is_bot) and e.path == top_page and local_day(e.ts, TZ) in days
    )  # fmt: skip
    assert {r["value"]: r["pageviews"] for r in body["results"]} == dict(want)


def define_reports(site: Site) -> tuple[dict[str, str], dict[str, str]]:
    """The test's goals and funnels as the site's models; their ids by name."""
    goals = [Goal.objects.create(site=site, **goal.body()) for goal in GOALS]
    funnels = [Funnel.create(site, name, [goals[i].pk for i in steps], window, strict)
               for name, steps, window, strict in FUNNELS]  # fmt: skip
    return {g.name: str(g.pk) for g in goals}, {f.name: str(f.pk) for f in funnels}


@pytest.mark.django_db
def test_range_spanning_settled_days_and_today_equals_truth(
    cfg: Config, rt_topic: str, site_key: SiteKey, spark: SparkSession
) -> None:
    client = Client()
    site = site_key.site.site_id
    now = dt.datetime.now(dt.UTC)
    events, days = traffic(site, now)
    produce(cfg, rt_topic, events)
    run_realtime(cfg, rt_topic, end_offsets(cfg, rt_topic))
    archive_topic(cfg, rt_topic, len(events))

    # Nothing settled yet: day before yesterday partly out of the realtime window.
    body = site_key.get(client, "timeseries", interval="day", **{"from": days[0]}).json()
    assert body["sources"]["watermark"] is None

    goal_ids, funnel_ids = define_reports(site_key.site)

    first = dt.date.fromisoformat(days[0])
    roll_up_in_session(spark, cfg, first, first, [site])
    check_against_truth(client, site_key, events, days, settled=days[:1])

    # The watermark moves after the next rollup; the answers stay equal to the truth.
    second = dt.date.fromisoformat(days[1])
    roll_up_in_session(spark, cfg, second, second, [site])
    check_against_truth(client, site_key, events, days, settled=days[:2])

    # Goals, funnels, custom events and engagement over the same traffic.
    def get(path: str, **params: object) -> dict:
        return site_key.get(client, path, **params).json()

    visitors = {d: stats["visitors"] for d, stats in exact(events, TZ, set(days)).items()}
    check_reports(get, events, TZ, days[:2], days[2], goal_ids, funnel_ids, visitors)
    # Where each goal's converting visitors came from, by first session of the day.
    assert check_goal_sources(get, distinct_humans(events), TZ, days[:2], days[2], goal_ids) > 0

    # Asked again, the settled parts come from the query layer's cache (keyed on the days'
    # load generations) and the realtime parts are added to copies: still exactly the truth.
    cache = get_service().cache
    assert cache is not None
    hits = cache.stats.hits
    check_against_truth(client, site_key, events, days, settled=days[:2])
    assert cache.stats.hits > hits
