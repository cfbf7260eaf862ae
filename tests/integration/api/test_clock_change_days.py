"""Clock-change days through the archive, the Spark rollup, MongoDB, Redis and the API.

For zones with unusual rules (a one-hour change either way, the southern hemisphere, a
half-hour offset, Lord_Howe's 30-minute change, Caracas' 2016 offset change), every hourly
bucket the API answers equals a truth computed here from the generated events, the buckets
sum to the day, and a fall-back day inside the realtime window counts each hour once.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import random
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
import redis
from django.test import Client
from pyspark.sql import SparkSession

from archive.reader import read_events
from archive.schema import partition_path, to_row
from archive.store import Archive, ArchiveRow
from footfall.config import Config
from footfall.demo import DemoTraffic
from footfall_capture.events import Event, encode
from historical.buckets import day_buckets, local_midnight, ms
from historical.reads import RollupReads
from historical.store import connect
from query.params import Range
from query.service import QueryService, QuerySite
from realtime.keys import KeyLayout
from realtime.reads import RealtimeQueries
from realtime.store import CounterStore
from spark_jobs.rollup import transform_and_load
from tests.integration.api.conftest import SiteKey, make_site

# (zone, local days: both change days of a year where the zone has them, buckets per day)
ZONES = {
    "Europe/Berlin": {"2026-03-29": 23, "2026-10-25": 25},
    "Australia/Sydney": {"2026-04-05": 25, "2026-10-04": 23},
    "Australia/Lord_Howe": {"2026-04-05": 25, "2026-10-04": 24},
    "Asia/Kolkata": {"2026-03-29": 24, "2026-10-25": 24},
    "America/Caracas": {"2016-05-01": 24},
}
STEP_MS = 6 * 60_000


def day_events(site: str, zone: str, day: str, seed: int) -> list[Event]:
    """Page views from an hour before the local day to an hour after, about one per 6 minutes."""
    tz = ZoneInfo(zone)
    first = ms(local_midnight(dt.date.fromisoformat(day), tz)) - 3_600_000
    last = ms(local_midnight(dt.date.fromisoformat(day) + dt.timedelta(days=1), tz)) + 3_600_000
    gen, rng = DemoTraffic(site_id=site, visitors=30, seed=seed), random.Random(seed)
    return [gen.event(ts + rng.randrange(STEP_MS)) for ts in range(first, last, STEP_MS)]


def truth(events: list[Event], zone: str, day: str) -> list[tuple[int, int, int]]:
    """(bucket start ms, page views, distinct visitors) of every bucket of the local day."""
    out = []
    for bucket in day_buckets(dt.date.fromisoformat(day), ZoneInfo(zone)):
        inside = [e for e in events if bucket.start_ms <= e.ts < bucket.end_ms]
        out.append((bucket.start_ms, len(inside), len({e.visitor_id for e in inside})))
    return out


def instant(stamp: str) -> int:
    parsed = dt.datetime.fromisoformat(stamp)
    assert parsed.utcoffset() is not None, stamp  # every bucket's time carries its offset
    return ms(parsed)


def archive(cfg: Config, events: list[Event]) -> None:
    """Write ``events`` to the archive as the archiver would (one Kafka partition, in order)."""
    rows = [ArchiveRow(partition_path(e.site_id, e.ts), to_row(e, encode(e), 0, i)) for i, e in enumerate(events)]
    Archive(cfg.archive_url).write(rows)


def roll_up(spark: SparkSession, cfg: Config, sites: dict[str, str], days: list[str]) -> None:
    """The rollup job's read, transform and load of exactly ``days`` (as the job runs a chunk)."""
    events = read_events(spark, cfg.archive_url, sorted(sites), days).persist()
    try:
        transform_and_load(spark, events, sites, days, cfg.mongo_url, cfg.mongo_db)
    finally:
        events.unpersist()


@pytest.mark.django_db
def test_hour_series_of_change_days_equal_the_truth(cfg: Config, tmp_path: Path, spark: SparkSession) -> None:
    """Each zone's change days: 25/23/24 points, each at its instant with its offset, page views
    and visitors exact per bucket, summing to the day's totals."""
    cfg = dataclasses.replace(cfg, archive_url=(tmp_path / "archive").as_uri())
    keys: dict[str, SiteKey] = {zone: make_site(tz=zone) for zone in ZONES}
    generated: dict[tuple[str, str], list[Event]] = {}
    for n, (zone, days) in enumerate(ZONES.items()):
        for day in days:
            events = day_events(keys[zone].site.site_id, zone, day, seed=n * 10 + len(generated))
            generated[(zone, day)] = events
    archive(cfg, [e for events in generated.values() for e in events])
    recent = {keys[z].site.site_id: z for z in ZONES if z != "America/Caracas"}
    roll_up(spark, cfg, recent, sorted({d for z in recent.values() for d in ZONES[z]}))
    roll_up(spark, cfg, {keys["America/Caracas"].site.site_id: "America/Caracas"}, ["2016-05-01"])

    client = Client()
    for (zone, day), events in generated.items():
        sk, count = keys[zone], ZONES[zone][day]
        want = truth(events, zone, day)
        assert len(want) == count
        next_day = (dt.date.fromisoformat(day) + dt.timedelta(days=1)).isoformat()
        span = {"from": day, "to": next_day, "interval": "hour"}
        for metric, column in (("pageviews", 1), ("visitors", 2)):
            body = sk.get(client, "timeseries", metric=metric, **span).json()
            got = [(instant(p["t"]), p["value"], p["source"]) for p in body["points"]]
            assert got == [(start, *values[column - 1 : column], "batch") for start, *values in want], (zone, day)
        day_total = sk.get(client, "aggregate", **{"from": day, "to": next_day}).json()["results"]
        assert sum(pv for _, pv, _ in want) == day_total["pageviews"]["value"], (zone, day)
        assert len({e.visitor_id for e in events if ms(local_midnight(dt.date.fromisoformat(day), ZoneInfo(zone)))
                    <= e.ts < ms(local_midnight(dt.date.fromisoformat(next_day), ZoneInfo(zone)))}) == (
            day_total["visitors"]["value"]
        )  # fmt: skip


@pytest.mark.django_db
def test_fall_back_day_inside_the_realtime_window_counts_each_hour_once(
    cfg: Config, tmp_path: Path, spark: SparkSession
) -> None:
    """Berlin's fall-back day with the query clock 30 hours after the change: before the rollup
    every one of the 25 hours comes from Redis, after it from the rollup, each once and equal to
    the truth; the day's total is the same both times. (A coming change: Redis expires counters
    at absolute times, so counters of a past day would be gone at once.)"""
    zone, day = "Europe/Berlin", "2027-10-31"
    cfg = dataclasses.replace(cfg, archive_url=(tmp_path / "archive").as_uri())
    site = make_site(tz=zone).site.site_id
    events = day_events(site, zone, day, seed=99)
    now = dt.datetime(2027, 11, 1, 7, tzinfo=dt.UTC)
    layout = KeyLayout(retention_s=cfg.realtime_retention_s)
    store = CounterStore(redis.Redis.from_url(cfg.redis_url), layout)
    # Counted as the realtime workers would have, at the (past) time the events arrived.
    store.apply(events, now_ms=max(e.ts for e in events) + 1)
    archive(cfg, events)
    client_, db = connect(cfg.mongo_url, cfg.mongo_db)
    service = QueryService(RollupReads(db), RealtimeQueries(store), cfg.realtime_retention_s, now=lambda: now)
    tz = ZoneInfo(zone)
    rng = Range(local_midnight(dt.date(2027, 10, 31), tz), local_midnight(dt.date(2027, 11, 1), tz), tz)
    info = QuerySite(site, zone)
    want = [(start, pv) for start, pv, _ in truth(events, zone, day)]
    assert len(want) == 25
    try:
        for source in ("realtime", "batch"):
            body = service.timeseries(info, "pageviews", "hour", rng)
            got = [(instant(p["t"]), p["value"]) for p in body["points"]]
            assert got == want, source
            assert {p["source"] for p in body["points"]} == {source}
            assert body["sources"]["missing"]["buckets"] == 0
            total = service.aggregate(info, rng, compare=False)["results"]["pageviews"]["value"]
            assert total == sum(pv for _, pv in want), source
            roll_up(spark, cfg, {site: zone}, [day])
    finally:
        client_.close()
        for key in store.client.scan_iter(match=layout.site_pattern(site), count=1000):
            store.client.delete(key)
