"""Hourly rollups on days whose clock changes, in zones with unusual rules: every bucket exact
against a truth computed here from the generated events with zoneinfo."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from zoneinfo import ZoneInfo

import pytest
from pyspark.sql import Row

from historical.buckets import day_buckets, local_midnight, ms
from spark_jobs.transforms import rollup

# (site, zone, local day, buckets the day has)
CASES = [
    ("berlin", "Europe/Berlin", "2026-03-29", 23),
    ("berlin", "Europe/Berlin", "2026-10-25", 25),
    ("kolkata", "Asia/Kolkata", "2026-03-29", 24),  # +05:30, no DST: buckets start at HH:30 UTC
    ("kolkata", "Asia/Kolkata", "2026-10-25", 24),
    ("sydney", "Australia/Sydney", "2026-04-05", 25),  # southern hemisphere: falls back in April
    ("sydney", "Australia/Sydney", "2026-10-04", 23),
    ("lordhowe", "Australia/Lord_Howe", "2026-04-05", 25),  # 30-minute change: one 30-minute bucket
    ("lordhowe", "Australia/Lord_Howe", "2026-10-04", 24),
    ("caracas", "America/Caracas", "2016-05-01", 24),  # -04:30 became -04:00: a 30-minute bucket
]
STEP_MS = 7 * 60_000  # an event every 7 minutes: every bucket, 30-minute ones too, gets some
VISITORS = 5


def generated(site: str, zone: str, day: str) -> list[dict[str, object]]:
    """Page views from an hour before the local day to an hour after it, 5 visitors in turn."""
    tz = ZoneInfo(zone)
    first = ms(local_midnight(dt.date.fromisoformat(day), tz)) - 3_600_000
    last = ms(local_midnight(dt.date.fromisoformat(day) + dt.timedelta(days=1), tz)) + 3_600_000
    return [
        {"event_id": f"{site}-{day}-{n}", "site_id": site, "ts": ts, "visitor_id": f"v{n % VISITORS}"}
        for n, ts in enumerate(range(first, last, STEP_MS))
    ]


def truth(rows: list[dict[str, object]], zone: str, day: str) -> dict[int, tuple[int, int]]:
    """Per bucket start (ms) of the local ``day``: (page views, distinct visitors)."""
    views: dict[int, list[str]] = defaultdict(list)
    buckets = day_buckets(dt.date.fromisoformat(day), ZoneInfo(zone))
    for row in rows:
        ts = int(row["ts"])  # type: ignore[call-overload]
        for bucket in buckets:
            if bucket.start_ms <= ts < bucket.end_ms:
                views[bucket.start_ms].append(str(row["visitor_id"]))
    return {start: (len(v), len(set(v))) for start, v in views.items()}


@pytest.fixture(scope="session")
def rolled(make_events, make_zones, changes) -> tuple[dict[str, list[dict]], dict[str, list[Row]]]:
    """The generated rows by ``site|day``, and the rollup's daily and hourly rows, collected
    once for every test here (each collect of a lazy output would run the whole rollup again).
    Of the session: pytest-xdist may run other modules' tests between these, which would end a
    module-scoped fixture and roll up again (each worker that runs one of them rolls up once)."""
    rows = {f"{site}|{day}": generated(site, zone, day) for site, zone, day, _ in CASES}
    events = make_events(*(row for group in rows.values() for row in group))
    zones = make_zones({site: zone for site, zone, _, _ in CASES})
    result = rollup(events, zones, sorted({day for _, _, day, _ in CASES}), changes)
    return rows, {name: result[name].collect() for name in ("daily", "hourly")}


def of(rows: list[Row], site: str, day: str) -> list[Row]:
    return [r for r in rows if (r["site_id"], r["day"]) == (site, day)]


@pytest.mark.parametrize(("site", "zone", "day", "count"), CASES, ids=[f"{c[1]}-{c[2]}" for c in CASES])
def test_every_bucket_of_a_change_day_is_exact(rolled, site: str, zone: str, day: str, count: int) -> None:
    """Page views and visitors per bucket equal the truth; the day has ``count`` buckets; they
    sum to the day's page views."""
    rows, result = rolled
    want = truth(rows[f"{site}|{day}"], zone, day)
    got = {r["bucket_start"]: (r["pageviews"], r["visitors"]) for r in of(result["hourly"], site, day)}
    assert got == want
    assert len(got) == count
    [daily] = of(result["daily"], site, day)
    assert sum(pv for pv, _ in got.values()) == daily["pageviews"]
    assert daily["visitors"] == VISITORS


def test_the_repeated_hour_is_two_buckets(rolled) -> None:
    """Berlin's 2026-10-25: 02:00+02:00 and 02:00+01:00 are two buckets of an hour each."""
    rows, result = rolled
    counts = {r["bucket_start"]: r["pageviews"] for r in of(result["hourly"], "berlin", "2026-10-25")}
    for start in (dt.datetime(2026, 10, 25, 0, tzinfo=dt.UTC), dt.datetime(2026, 10, 25, 1, tzinfo=dt.UTC)):
        begin = ms(start)
        inside = [r for r in rows["berlin|2026-10-25"] if begin <= int(r["ts"]) < begin + 3_600_000]
        assert counts[begin] == len(inside) > 0
