"""Journeys through the real stack: hand-made visits archived, rolled up by the job (in the run's Spark
session) into the Mongo-wire server, then asked through the API; every answer equals the journeys
computed in plain Python from the same events (tests/journey_truth.py).

The visits hold reloads, SPA navigations (page views sent by the tracker without a page load: page
views like any other), custom events as steps, a repeated event, a 30-minute split, a session over
midnight, requests, engagement reports, a bot, an event without a visitor and an event archived twice.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import uuid
from pathlib import Path
from zoneinfo import ZoneInfo

import pymongo
import pytest
from django.test import Client
from pyspark.sql import SparkSession

from footfall.config import Config
from footfall_capture.events import SCHEMA_VERSION, Event, UserAgent
from historical.store import JOURNEYS, ROLLUP_COLLECTIONS, RUNS
from tests.integration.api.conftest import SiteKey, make_site
from tests.integration.api.test_clock_change_days import archive
from tests.journey_truth import Hit, journey
from tests.spark_session import roll_up_in_session

TZ = "Europe/Berlin"
DAY1, DAY2, DAY3 = "2026-11-02", "2026-11-03", "2026-11-04"


def at(day: str, hour: int, minute: int = 0) -> int:
    return int(dt.datetime.combine(dt.date.fromisoformat(day), dt.time(hour, minute), ZoneInfo(TZ)).timestamp() * 1000)


def visit(site: str, visitor: str | None, *steps: tuple[int, str], bot: bool = False) -> list[Event]:
    """``(ts, "/path")`` page views, ``(ts, "request /path")``/``(ts, "engagement /path")`` and
    ``(ts, "name")`` custom events of one visitor."""
    out = []
    for ts, what in steps:
        kind, _, path = what.partition(" ")
        if what.startswith("/"):
            kind, path = "pageview", what
        fields: dict[str, object] = {"type": kind}
        if path:
            fields |= {"path": path, "url": f"https://example.com{path}"}
        agent = UserAgent(browser="Googlebot", device="bot", is_bot=True) if bot else None
        vid = uuid.uuid5(uuid.NAMESPACE_URL, visitor).hex if visitor else None
        out.append(Event(event_id=str(uuid.uuid4()), site_id=site, ts=ts, received_at=ts, schema=SCHEMA_VERSION,
                         visitor_id=vid, ua=agent, **fields))  # fmt: skip
    return out


def traffic(site: str) -> list[Event]:
    events = [
        *visit(site, "v1", (at(DAY1, 10), "/"), (at(DAY1, 10, 1), "/"), (at(DAY1, 10, 2), "request /api/cart"),
               (at(DAY1, 10, 3), "/pricing"), (at(DAY1, 10, 4), "engagement /pricing"), (at(DAY1, 10, 5), "signup"),
               (at(DAY1, 10, 6), "/welcome")),
        # The same visitor's second session, an event repeated: counted once per step.
        *visit(site, "v1", (at(DAY1, 11), "/"), (at(DAY1, 11, 1), "/pricing"), (at(DAY1, 11, 2), "signup"),
               (at(DAY1, 11, 3), "signup")),
        # 40 minutes without a step split v2's visit in two.
        *visit(site, "v2", (at(DAY1, 12), "/blog"), (at(DAY1, 12, 1), "/"), (at(DAY1, 12, 2), "/pricing"),
               (at(DAY1, 12, 42), "/pricing"), (at(DAY1, 12, 43), "/")),
        # From 23:50 to 00:12: DAY1's session.
        *visit(site, "v3", (at(DAY1, 23, 50), "/"), (at(DAY2, 0, 5), "/pricing"), (at(DAY2, 0, 10), "signup"),
               (at(DAY2, 0, 12), "/welcome")),
        *visit(site, "v4", (at(DAY2, 9), "signup"), (at(DAY2, 9, 1), "/"), (at(DAY2, 9, 2), "/pricing"),
               (at(DAY2, 9, 3), "signup")),
        *visit(site, "v5", (at(DAY2, 10), "/"), (at(DAY2, 10, 1), "/docs")),
        *visit(site, "bot", (at(DAY1, 10), "/"), (at(DAY1, 10, 1), "/pricing"), bot=True),
        *visit(site, None, (at(DAY1, 10), "/"), (at(DAY1, 10, 1), "/pricing")),
    ]  # fmt: skip
    return [*events, events[3]]  # archived twice, counted once


def hit(e: Event) -> Hit:
    return Hit(e.visitor_id, e.ts, e.event_id, e.type, e.path, bool(e.ua and e.ua.is_bot))


QUESTIONS = [
    ("/", ("/pricing", "signup"), "next"),
    ("signup", ("/", "/pricing"), "next"),
    ("signup", ("/pricing", "/"), "previous"),
    ("/pricing", ("/", "/blog"), "previous"),
]


@pytest.mark.django_db
def test_journeys_through_the_api_equal_the_truth(
    cfg: Config, tmp_path: Path, spark: SparkSession, client: Client
) -> None:
    """Page and event starts, three steps deep along a path, forwards and backwards, one day and two."""
    cfg = dataclasses.replace(cfg, archive_url=(tmp_path / "archive").as_uri())
    key: SiteKey = make_site(tz=TZ)
    site = key.site.site_id
    events = traffic(site)
    archive(cfg, events)
    mongo: pymongo.MongoClient = pymongo.MongoClient(cfg.mongo_url)
    db = mongo[cfg.mongo_db]
    try:
        roll_up_in_session(spark, cfg, dt.date.fromisoformat(DAY1), dt.date.fromisoformat(DAY2), [site])
        ids = sorted(d["_id"] for d in db[JOURNEYS].find({"site_id": site}))
        assert ids == [f"{site}|{DAY1}|0", f"{site}|{DAY2}|0"]  # one chunk a day
        hits = [hit(e) for e in events]
        seen_ends = set()
        for first, last, days in ((DAY1, DAY2, [DAY1]), (DAY1, DAY3, [DAY1, DAY2])):
            for start, path, direction in QUESTIONS:
                params = {"start": start, "path": ",".join(path), "direction": direction, "from": first, "to": last}
                answer = client.get(f"/api/v1/sites/{site}/journeys", params, HTTP_AUTHORIZATION=f"Bearer {key.key}")
                assert answer.status_code == 200, answer.content
                body = answer.json()
                truth = journey(hits, TZ, days, start, path, direction)
                assert body["visitors"] == truth["visitors"] > 0, (start, path, direction, days)
                got = [{o["label"]: o["visitors"] for o in step["options"]} for step in body["steps"]]
                assert got == truth["columns"], (start, path, direction, days)
                for n, step in enumerate(body["steps"][: len(path)]):
                    assert step["selected"] == path[n]
                    assert step["visitors"] == truth["columns"][n].get(path[n], 0)
                    assert step["share"] == round(step["visitors"] / body["visitors"], 6)
                assert body["sources"]["batch"]["days"] == days
                seen_ends |= {label for column in got for label in column if label.startswith("(")}
        assert seen_ends == {"(exit)", "(entrance)"}
    finally:
        for name in (*ROLLUP_COLLECTIONS, RUNS):
            db[name].delete_many({"site_id": site})
        mongo.close()
