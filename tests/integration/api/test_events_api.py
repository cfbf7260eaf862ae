"""Custom events, their properties and engagement through the API, from settled rollups
(the shapes the nightly job writes; the job itself is tested in tests/spark and the truth
tests)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.test import Client

from footfall.config import Config
from footfall.vocabulary import PROP_SEPARATOR
from historical.store import BREAKDOWNS, DAILY, HOURLY, RUNS, DayDocuments, connect, load_day
from tests.integration.api.conftest import SiteKey, make_site

pytestmark = pytest.mark.django_db
DAYS = ("2026-10-01", "2026-10-02")


def prop_doc(event: str, prop: str, text: str, events: int, visitors: int) -> dict:
    value = PROP_SEPARATOR.join((event, prop, text))
    return {"dimension": "event_prop", "value": value, "event": event, "prop": prop, "prop_value": text,
            "pageviews": 0, "events": events, "visitors": visitors}  # fmt: skip


@pytest.fixture
def settled(cfg: Config) -> Iterator[SiteKey]:
    sk = make_site(tz="UTC")
    site = sk.site.site_id
    mongo, db = connect(cfg.mongo_url, cfg.mongo_db)
    for n, day in enumerate(DAYS):
        docs = [
            {"dimension": "event", "value": "signup", "pageviews": 0, "events": 10 + n, "visitors": 8},
            {"dimension": "event", "value": "download", "pageviews": 0, "events": 30, "visitors": 3},
            prop_doc("signup", "plan", "pro", 6, 5),
            prop_doc("signup", "plan", "free", 4 + n, 3),
            prop_doc("signup", "seats", "3", 2, 2),
            {"dimension": "page", "value": "/a", "pageviews": 40, "visitors": 20, "engaged_ms": 120_000,
             "engagements": 30, "scroll_views": 20, "scroll_sum": 1100},
            {"dimension": "page", "value": "/b", "pageviews": 0, "visitors": 0, "engaged_ms": 5_000,
             "engagements": 1, "scroll_views": 0, "scroll_sum": 0},
            {"dimension": "ref", "value": "news.example", "pageviews": 10, "visitors": 9, "engaged_ms": 61_500},
        ]  # fmt: skip
        load_day(db, DayDocuments(site, day, {"pageviews": 40, "visitors": 20}, [], docs, {"status": "complete"}))
    yield sk
    for name in (DAILY, HOURLY, BREAKDOWNS, RUNS):
        db[name].delete_many({"site_id": site})
    mongo.close()


RANGE = {"from": DAYS[0], "to": "2026-10-03"}


def test_custom_events_are_ranked_by_events(client: Client, settled: SiteKey) -> None:
    body = settled.get(client, "breakdown/events", **RANGE).json()
    assert body["metrics"] == ["events", "visitors"]
    assert body["results"] == [
        {"value": "download", "events": 60, "visitors": 6},
        {"value": "signup", "events": 21, "visitors": 16},
    ]


def test_one_property_of_an_event(client: Client, settled: SiteKey) -> None:
    body = settled.get(client, "events/signup/properties/plan", **RANGE).json()
    assert body["results"] == [
        {"value": "pro", "events": 12, "visitors": 10},
        {"value": "free", "events": 9, "visitors": 6},
    ]
    assert body["total"] == 2
    csv = settled.get(client, "events/signup/properties/plan", format="csv", **RANGE).content.decode()
    assert csv.splitlines()[:2] == ["value,events,visitors", "pro,12,10"]
    assert settled.get(client, "events/bad name/properties/plan").json()["error"]["parameter"] == "event"
    assert settled.get(client, "events/signup/properties/" + "p" * 65).json()["error"]["parameter"] == "prop"


def test_engagement_metrics_of_pages_and_referrers(client: Client, settled: SiteKey) -> None:
    metrics = "pageviews,time_on_page,scroll_depth,engaged_time"
    body = settled.get(client, "breakdown/pages", metrics=metrics, **RANGE).json()
    rows = {r["value"]: r for r in body["results"]}
    assert rows["/a"] == {"value": "/a", "pageviews": 80, "time_on_page": 3.0, "scroll_depth": 55.0,
                          "engaged_time": 240.0}  # fmt: skip
    # Engagement without a page view that day: engaged time counts, time per page view cannot.
    assert rows["/b"] == {"value": "/b", "pageviews": 0, "time_on_page": None, "scroll_depth": None,
                          "engaged_time": 10.0}  # fmt: skip
    body = settled.get(client, "breakdown/referrers", metrics="engaged_time,time_on_page", **RANGE).json()
    assert body["results"] == [{"value": "news.example", "engaged_time": 123.0, "time_on_page": None}]
    assert settled.get(client, "breakdown/pages", metrics="nope").json()["error"]["parameter"] == "metrics"
