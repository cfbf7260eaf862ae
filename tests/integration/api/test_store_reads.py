"""How many Mongo reads a query costs, over the real Mongo-wire server: every read is a
pass over a collection on the local Mongo-wire server (no secondary indexes), so the query
layer reads ``batch_runs`` once per query (settled days and watermark together), the daily
rollups once per aggregate, however many periods it compares, and with its cache nothing
but ``batch_runs`` for a repeated query until a day of it is loaded again."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator
from zoneinfo import ZoneInfo

import pymongo
import pytest
import redis
from pymongo import monitoring
from pymongo.database import Database

from footfall.config import Config
from historical.buckets import ms
from historical.reads import RollupReads
from historical.store import DAILY, HOURLY, RUNS, DayDocuments, hour_document, load_day
from query.params import Range
from query.service import QueryService, QuerySite
from query.settled_cache import SettledCache
from realtime.keys import KeyLayout
from realtime.reads import RealtimeQueries
from realtime.store import CounterStore

TZ = "Europe/Berlin"
NOW = dt.datetime(2026, 11, 23, 12, tzinfo=dt.UTC)  # realtime keeps 48 h: settled days are older
DAYS = [dt.date(2026, 11, 1) + dt.timedelta(days=i) for i in range(20)]  # 1..20 November
SETTLED = DAYS[:-1]  # the 20th has a failed run: not settled, and beyond Redis's window


class Finds(monitoring.CommandListener):
    """The collections this client's ``find`` commands read, in order."""

    def __init__(self) -> None:
        self.collections: list[str] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if event.command_name == "find":
            self.collections.append(event.command["find"])

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


@pytest.fixture
def reads(cfg: Config) -> Iterator[tuple[QueryService, QuerySite, Finds, Database]]:
    finds = Finds()
    client: pymongo.MongoClient = pymongo.MongoClient(cfg.mongo_url, event_listeners=[finds], tz_aware=True)
    db = client[cfg.mongo_db]
    site = f"reads-{uuid.uuid4().hex[:8]}"
    for n, day in enumerate(DAYS):
        run = {"status": "complete" if day in SETTLED else "failed", "tz": TZ}
        daily = {"pageviews": 100 + n, "visitors": 10 + n, "sessions": 20, "bounces": 5, "visit_duration_s": 30.0}
        nine = ms(dt.datetime.combine(day, dt.time(9), ZoneInfo(TZ)))
        hour = {**hour_document(day.isoformat(), TZ, nine), "pageviews": 100 + n}
        load_day(db, DayDocuments(site, day.isoformat(), daily, [hour], [], run))
    store = CounterStore(redis.Redis.from_url(cfg.redis_url), KeyLayout(retention_s=cfg.realtime_retention_s))
    service = QueryService(RollupReads(db), RealtimeQueries(store), cfg.realtime_retention_s, now=lambda: NOW)
    finds.collections.clear()
    yield service, QuerySite(site, TZ), finds, db
    for name in (DAILY, HOURLY, RUNS):
        db[name].delete_many({"site_id": site})
    client.close()


def local_range(first: dt.date, days: int) -> Range:
    tz = ZoneInfo(TZ)
    start = dt.datetime.combine(first, dt.time(), tz)
    return Range(start, start + dt.timedelta(days=days), tz)


def test_aggregate_with_compare_reads_runs_once_and_days_once(reads) -> None:
    service, site, finds, _ = reads
    body = service.aggregate(site, local_range(dt.date(2026, 11, 11), 5), compare=True)
    assert finds.collections == [RUNS, DAILY]
    pageviews = body["results"]["pageviews"]
    assert pageviews["value"] == sum(100 + n for n in range(10, 15))  # 11..15 November
    assert pageviews["previous"] == sum(100 + n for n in range(5, 10))  # 6..10 November
    assert body["results"]["sessions"] == {"value": 100, "previous": 100, "change": 0.0}
    assert body["sources"]["watermark"] == SETTLED[-1].isoformat()


def test_a_day_series_reads_runs_once(reads) -> None:
    service, site, finds, _ = reads
    body = service.timeseries(site, "pageviews", "day", local_range(dt.date(2026, 11, 3), 4))
    assert finds.collections == [RUNS, DAILY]
    assert [p["value"] for p in body["points"]] == [102, 103, 104, 105]
    assert body["sources"]["watermark"] == SETTLED[-1].isoformat()


def test_the_watermark_is_found_when_nothing_of_the_range_is_settled(reads) -> None:
    """A range after the watermark: the settled-days read finds nothing, one more read of a
    single document names the watermark; the unsettled day is missing, never guessed."""
    service, site, finds, _ = reads
    body = service.aggregate(site, local_range(DAYS[-1], 1), compare=False)
    assert finds.collections == [RUNS, RUNS]
    assert body["sources"]["watermark"] == SETTLED[-1].isoformat()
    assert body["results"]["pageviews"]["value"] is None


def test_an_hour_series_reads_only_the_hourly_rollup(reads) -> None:
    """Hour buckets take nothing from the daily documents, so those are not read; a metric
    the hourly rollup does not hold reads no rollup at all (its hours are null, with a note)."""
    service, site, finds, _ = reads
    body = service.timeseries(site, "pageviews", "hour", local_range(dt.date(2026, 11, 3), 2))
    assert finds.collections == [RUNS, HOURLY]
    nonzero = {p["t"]: p["value"] for p in body["points"] if p["value"]}
    assert nonzero == {"2026-11-03T09:00:00+01:00": 102, "2026-11-04T09:00:00+01:00": 103}
    assert len(body["points"]) == 48
    assert all(p["source"] == "batch" for p in body["points"])

    finds.collections.clear()
    body = service.timeseries(site, "bounce_rate", "hour", local_range(dt.date(2026, 11, 3), 2))
    assert finds.collections == [RUNS]
    assert all(p["value"] is None for p in body["points"])
    assert "bounce_rate is rolled up per day, not per hour" in body["sources"]["notes"]


def test_cached_settled_reads_last_until_the_day_is_loaded_again(reads) -> None:
    """With the cache, a repeated query reads only ``batch_runs``; loading one of its days
    again gives that day a new generation, so the next query reads the new documents."""
    service, site, finds, db = reads
    service.cache = SettledCache(10_000)
    rng = local_range(dt.date(2026, 11, 11), 5)  # 11..15 November
    first = service.aggregate(site, rng, compare=False)
    assert finds.collections == [RUNS, DAILY]
    finds.collections.clear()
    assert service.aggregate(site, rng, compare=False) == first
    assert finds.collections == [RUNS]

    run = {"status": "complete", "tz": TZ}
    daily = {"pageviews": 1000, "visitors": 10, "sessions": 20, "bounces": 5, "visit_duration_s": 30.0}
    load_day(db, DayDocuments(site.site_id, "2026-11-13", daily, [], [], run))
    finds.collections.clear()
    again = service.aggregate(site, rng, compare=False)
    assert finds.collections == [RUNS, DAILY]
    before = first["results"]["pageviews"]["value"]
    assert again["results"]["pageviews"]["value"] == before - (100 + 12) + 1000
    assert (service.cache.stats.hits, service.cache.stats.misses) == (1, 2)
