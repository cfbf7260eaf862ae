"""Funnels through the real rollup job (in the run's Spark session, archive files, the Mongo-wire server).

Two Berlin days of hand-made visits whose funnel steps are known: the job writes one document
per funnel and day with the exact visitors, medians and histograms; a second run writes
identical documents; a run without one of the funnels removes its documents; the query layer
sums the days.
"""

from __future__ import annotations

import bisect
import datetime as dt
import statistics
import uuid
from zoneinfo import ZoneInfo

import pymongo
import pytest
from pyspark.sql import SparkSession

from footfall.config import Config
from footfall.goals import FUNNEL_TIME_BOUNDS_MS, FunnelSpec, GoalSpec
from footfall.models import Site
from footfall_capture.events import SCHEMA_VERSION, Event, UserAgent
from historical.reads import RollupReads
from historical.store import FUNNELS, documents
from tests.integration.api.test_clock_change_days import archive
from tests.spark_session import roll_up_in_session

TZ = "Europe/Berlin"
DAY1, DAY2 = "2026-11-02", "2026-11-03"
MINUTE = 60_000

SIGNUP = FunnelSpec(
    "1",
    (
        GoalSpec("p", "page", path="/pricing"),
        GoalSpec("s", "event", event="signup", prop="plan", value="pro"),
        GoalSpec("w", "page", path="/welcome*"),
    ),
    name="Signup",
)
STRICT = FunnelSpec("2", (GoalSpec("a", "page", path="/a"), GoalSpec("b", "page", path="/b")), window_minutes=10,
                    strict=True, name="A then B")  # fmt: skip


def at(day: str, hour: int, minute: int = 0) -> int:
    moment = dt.datetime.combine(dt.date.fromisoformat(day), dt.time(hour, minute), ZoneInfo(TZ))
    return int(moment.timestamp() * 1000)


def visit(site: str, visitor: str, *steps: tuple[int, str], bot: bool = False) -> list[Event]:
    """One visitor's events: ``(ts, "/path")`` page views or ``(ts, "name plan")`` custom events."""
    out = []
    for ts, what in steps:
        if what.startswith("/"):
            fields: dict[str, object] = {"type": "pageview", "path": what, "url": f"https://example.com{what}"}
        else:
            name, plan = what.split()
            fields = {"type": name, "props": {"plan": plan}}
        agent = UserAgent(browser="Googlebot", device="bot", is_bot=True) if bot else None
        out.append(
            Event(event_id=str(uuid.uuid4()), site_id=site, ts=ts, received_at=ts, schema=SCHEMA_VERSION,
                  visitor_id=uuid.uuid5(uuid.NAMESPACE_URL, visitor).hex, ua=agent, **fields)
        )  # fmt: skip
    return out


def traffic(site: str) -> list[Event]:
    """The visits whose funnel steps the expected documents below spell out."""
    events = [
        *visit(
            site, "v1", (at(DAY1, 10), "/pricing"), (at(DAY1, 10, 2), "signup pro"), (at(DAY1, 10, 5), "/welcome/1")
        ),
        *visit(
            site, "v2", (at(DAY1, 11), "/pricing"), (at(DAY1, 11, 1), "signup free"), (at(DAY1, 11, 4), "signup pro")
        ),
        *visit(site, "v3", (at(DAY1, 12), "/pricing")),
        *visit(site, "bot", (at(DAY1, 12), "/pricing"), (at(DAY1, 12, 1), "signup pro"), bot=True),
        *visit(site, "v4", (at(DAY1, 13), "/a"), (at(DAY1, 13, 1), "/x"), (at(DAY1, 13, 2), "/b")),
        *visit(site, "v5", (at(DAY1, 14), "/a"), (at(DAY1, 14, 3), "/b")),
        # From 23:50 to 00:05: the attempt counts on the day it started.
        *visit(site, "v6", (at(DAY1, 23, 50), "/pricing"), (at(DAY2, 0, 5), "signup pro")),
        *visit(site, "v7", (at(DAY2, 9), "/pricing"), (at(DAY2, 9, 1), "signup pro"), (at(DAY2, 9, 31), "/welcome")),
    ]
    return [*events, events[-2]]  # an event archived twice counts once


def steps(first: int, *later: list[int]) -> list[dict]:
    """Expected stored steps: ``first`` visitors at step 1, then each later step's times (ms)."""

    def histogram(times: list[int]) -> list[int]:
        counts = [0] * (len(FUNNEL_TIME_BOUNDS_MS) + 1)
        for took in times:
            counts[bisect.bisect_right(FUNNEL_TIME_BOUNDS_MS, took)] += 1
        return counts

    out = [{"visitors": first, "median_ms": None, "times_ms": histogram([])}]
    for times in later:
        median = float(statistics.median(times)) if times else None
        out.append({"visitors": len(times), "median_ms": median, "times_ms": histogram(times)})
    return out


@pytest.mark.django_db
def test_funnels_roll_up_exactly_and_idempotently(batch_cfg: Config, spark: SparkSession) -> None:
    site = f"f-{uuid.uuid4().hex[:8]}"
    Site.objects.create(site_id=site, name="Funnels", domains=["example.com"], timezone=TZ)
    archive(batch_cfg, traffic(site))
    first, last = dt.date.fromisoformat(DAY1), dt.date.fromisoformat(DAY2)
    client: pymongo.MongoClient = pymongo.MongoClient(batch_cfg.mongo_url)
    db = client[batch_cfg.mongo_db]
    try:
        roll_up_in_session(spark, batch_cfg, first, last, [site], funnels={site: [SIGNUP, STRICT]})
        got = {(d["day"], d["funnel_id"]): d for d in db[FUNNELS].find({"site_id": site})}
        assert {key: (d["_id"], d["name"]) for key, d in got.items()} == {
            (DAY1, "1"): (f"{site}|{DAY1}|1", "Signup"),
            (DAY1, "2"): (f"{site}|{DAY1}|2", "A then B"),
            (DAY2, "1"): (f"{site}|{DAY2}|1", "Signup"),
            (DAY2, "2"): (f"{site}|{DAY2}|2", "A then B"),
        }
        assert got[(DAY1, "1")]["steps"] == steps(4, [2 * MINUTE, 4 * MINUTE, 15 * MINUTE], [3 * MINUTE])
        assert got[(DAY1, "2")]["steps"] == steps(2, [3 * MINUTE])  # v4's /x broke the strict funnel
        assert got[(DAY2, "1")]["steps"] == steps(1, [MINUTE], [30 * MINUTE])
        assert got[(DAY2, "2")]["steps"] == steps(0, [])  # nobody started it: zeros, still there

        # A re-run with one funnel fewer: the same documents, less the dropped funnel's.
        before = documents(db, site, [DAY1, DAY2])
        roll_up_in_session(spark, batch_cfg, first, last, [site], funnels={site: [SIGNUP]})
        after = documents(db, site, [DAY1, DAY2])
        assert sorted(d["_id"] for d in db[FUNNELS].find({"site_id": site})) == [
            f"{site}|{DAY1}|1",
            f"{site}|{DAY2}|1",
        ]
        assert after[FUNNELS] == [d for d in before[FUNNELS] if d["funnel_id"] == "1"]
        assert {k: v for k, v in after.items() if k != FUNNELS} == {k: v for k, v in before.items() if k != FUNNELS}, (
            "a re-run changed the documents"
        )

        both = RollupReads(db).funnel(site, "1", [DAY1, DAY2])
        assert both is not None
        assert (both.name, both.days) == ("Signup", (DAY1, DAY2))
        assert [s.visitors for s in both.steps] == [5, 4, 2]
        assert [s.median_estimated for s in both.steps] == [False, True, True]
        assert RollupReads(db).funnel(site, "2", [DAY1, DAY2]) is None
    finally:
        client.close()
