"""Revenue goals end to end: a settled day (archive, the rollup job in the run's Spark session, the
Mongo-wire server) and today (the speed layer's counters in Redis), read through the API.

The same visits happen on a settled day and a minute ago. Each conversion says here what it
is worth, so the truth is summed in the test with ``Decimal``: totals, averages per conversion,
revenue per visitor, per currency (EUR, USD, a lower-case code, a fixed-currency goal), the
invalid amounts counted without revenue, and the per-source breakdown of the settled day. Both
layers must answer exactly that, and a range over both their sum.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
import uuid
from collections.abc import Iterator
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

import pytest
import redis
from django.contrib.auth import get_user_model
from django.test import Client
from pyspark.sql import SparkSession

from dashboard.models import SiteAccess
from footfall.config import Config
from footfall.models import ApiKey, Goal, Site
from footfall_capture.events import SCHEMA_VERSION, Event, Utm
from historical.store import BREAKDOWNS, DAILY, GOAL_SOURCES, HOURLY, RUNS, connect
from realtime.keys import KeyLayout
from realtime.store import CounterStore
from tests.integration.api.test_clock_change_days import archive
from tests.integration.dash_callbacks import post_callback
from tests.spark_session import roll_up_in_session

pytestmark = pytest.mark.django_db(transaction=True)

DAY = "2026-11-10"  # settled; long out of the speed layer's window
PLACES = Decimal("0.0001")
# (visitor, event, props, what it is worth: (currency, amount) or None for no revenue)
Conversion = tuple[str, str, dict[str, object], tuple[str, Decimal] | None]
CONVERSIONS: list[Conversion] = [
    ("v1", "purchase", {"amount": 19.99, "currency": "EUR"}, ("EUR", Decimal("19.99"))),
    ("v1", "purchase", {"amount": "5.5", "currency": "usd"}, ("USD", Decimal("5.5"))),
    ("v2", "purchase", {"amount": 0.1 + 0.2, "currency": "EUR"}, ("EUR", Decimal("0.3"))),
    ("v2", "purchase", {"amount": "lots", "currency": "EUR"}, None),
    ("v2", "donate", {"sum": "12.34567"}, ("EUR", Decimal("12.3457"))),
    ("v3", "purchase", {"amount": -1, "currency": "EUR"}, None),
    ("v3", "purchase", {"amount": 49, "currency": "EURO"}, None),
    ("v3", "purchase", {"amount": 2_000_000_000, "currency": "EUR"}, None),
    ("v3", "donate", {"sum": 3}, ("EUR", Decimal("3"))),
]
ENTRIES = {  # each visitor's page view first: referrer, campaign, entry page, country
    "v1": {"ref_domain": "google.com", "utm": ("news", "email", "fall"), "path": "/landing", "country": "DE"},
    "v2": {"ref_domain": "twitter.com", "utm": None, "path": "/pricing", "country": "FR"},
    "v3": {"ref_domain": None, "utm": None, "path": "/", "country": "DE"},
    "v4": {"ref_domain": None, "utm": None, "path": "/", "country": "US"},  # never converts
}


def visitor_id(name: str) -> str:
    return uuid.uuid5(uuid.NAMESPACE_URL, name).hex * 2


def traffic(site: str, start_ms: int) -> list[Event]:
    events = []
    for n, (name, entry) in enumerate(ENTRIES.items()):
        utm = Utm(source=entry["utm"][0], medium=entry["utm"][1], campaign=entry["utm"][2]) if entry["utm"] else None
        events.append(Event(
            event_id=str(uuid.uuid4()), site_id=site, ts=start_ms + n * 1000, received_at=start_ms + n * 1000,
            schema=SCHEMA_VERSION, type="pageview", path=str(entry["path"]), url=f"https://example.com{entry['path']}",
            ref_domain=entry["ref_domain"], referrer=f"https://{entry['ref_domain']}/" if entry["ref_domain"] else None,
            utm=utm, country=str(entry["country"]), visitor_id=visitor_id(name),
        ))  # fmt: skip
    for n, (name, event, props, _) in enumerate(CONVERSIONS):
        ts = start_ms + 10_000 + n * 1000
        events.append(Event(event_id=str(uuid.uuid4()), site_id=site, ts=ts, received_at=ts, schema=SCHEMA_VERSION,
                            type=event, props=props, visitor_id=visitor_id(name)))  # fmt: skip
    return events


def truth(goal: str, copies: int = 1, visitors: int = 4) -> dict[str, object]:
    """The goal's revenue as the API writes it, summed here with Decimal from CONVERSIONS."""
    mine = [worth for _, event, _, worth in CONVERSIONS if event == goal] * copies
    currencies = []
    for currency in sorted({w[0] for w in mine if w}):
        amounts = [w[1] for w in mine if w and w[0] == currency]
        total = sum(amounts, Decimal(0))
        currencies.append({
            "currency": currency, "total": total, "conversions": len(amounts),
            "average": (total / len(amounts)).quantize(PLACES, ROUND_HALF_EVEN),
            "per_visitor": (total / (visitors * copies)).quantize(PLACES, ROUND_HALF_EVEN),
        })  # fmt: skip
    return {"currencies": currencies, "without_revenue": sum(1 for w in mine if w is None)}


def as_decimals(revenue: dict) -> dict[str, object]:
    """An answer's revenue with its decimal texts read as Decimal (so 20.29 == 20.2900)."""
    money = ("total", "average", "per_visitor")
    return {
        "currencies": [{k: Decimal(v) if k in money else v for k, v in c.items()} for c in revenue["currencies"]],
        "without_revenue": revenue["without_revenue"],
    }


@pytest.fixture
def site(cfg: Config) -> Iterator[tuple[Site, Client, str]]:
    site = Site.objects.create(site_id=f"rev-{uuid.uuid4().hex[:8]}", name="rev", domains=["example.com"])
    Goal.objects.create(site=site, name="Purchase", kind="event", event="purchase", revenue_prop="amount",
                        currency_prop="currency")  # fmt: skip
    Goal.objects.create(site=site, name="Donation", kind="event", event="donate", revenue_prop="sum", currency="EUR")
    _, key = ApiKey.issue(site, "analyst", ["read"])
    yield site, Client(HTTP_AUTHORIZATION=f"Bearer {key}"), key
    client, db = connect(cfg.mongo_url, cfg.mongo_db)
    for name in (DAILY, HOURLY, BREAKDOWNS, GOAL_SOURCES, RUNS):
        db[name].delete_many({"site_id": site.site_id})
    client.close()


def test_revenue_equals_the_truth_on_a_settled_day_today_and_both(
    site: tuple[Site, Client, str], cfg: Config, spark: SparkSession, tmp_path: Path
) -> None:
    record, api, _ = site
    sid = record.site_id
    goals = {g.event: str(g.pk) for g in Goal.objects.filter(site=record)}

    def answer(**params: str) -> dict[str, dict]:
        response = api.get(f"/api/v1/sites/{sid}/goals", params)
        assert response.status_code == 200, response.content[:300]
        return {row["event"]: row for row in response.json()["results"]}

    # The settled day.
    start = int(dt.datetime.fromisoformat(f"{DAY}T09:00:00+00:00").timestamp() * 1000)
    batch_cfg = dataclasses.replace(cfg, archive_url=(tmp_path / "archive").as_uri())
    archive(batch_cfg, traffic(sid, start))
    day = dt.date.fromisoformat(DAY)
    roll_up_in_session(spark, batch_cfg, day, day, [sid], goals=Goal.specs_by_site([sid]))
    settled = answer(**{"from": DAY, "to": "2026-11-11"})
    for goal in ("purchase", "donate"):
        assert as_decimals(settled[goal]["revenue"]) == truth(goal), goal
    assert settled["purchase"]["events"] == 7

    # The dashboard's goals table shows the same revenue.
    account = get_user_model().objects.create_user(f"u-{uuid.uuid4().hex[:6]}")
    SiteAccess.objects.create(user=account, site=record)
    browser = Client()
    browser.force_login(account)
    store = {"site": sid, "first": DAY, "last": DAY, "compare": False, "notes": []}
    outputs = [("hist-goals", "data"), ("hist-goals", "active_cell"), ("hist-goals", "selected_cells"),
               ("hist-goals-empty", "children"), ("hist-goals-empty", "hidden"), ("hist-goals-caption", "children"),
               ("hist-goals-admin", "children")]  # fmt: skip
    table = post_callback(browser, outputs, [("hist-range", "data", store)])["hist-goals"]["data"]
    purchase = next(row for row in table if row["name"] == "Purchase")
    assert purchase["revenue"] == "EUR 20.29, USD 5.50 (4 without revenue)"
    assert purchase["revenue_per_visitor"] == "EUR 5.0725, USD 1.375"

    # Where the paying visitors came from, on the settled day.
    def by(dimension: str) -> dict[str, list]:
        response = api.get(f"/api/v1/sites/{sid}/breakdown/{dimension}",
                           {"goal": goals["purchase"], "from": DAY, "to": "2026-11-11"})  # fmt: skip
        assert response.status_code == 200, response.content[:300]
        return {r["value"]: [(c["currency"], Decimal(c["total"]), c["conversions"], Decimal(c["per_visitor"]))
                             for c in r["revenue"]] for r in response.json()["results"]}  # fmt: skip

    google = [("EUR", Decimal("19.99"), 1, Decimal("19.99")), ("USD", Decimal("5.5"), 1, Decimal("5.5"))]
    assert by("referrers") == {"google.com": google, "twitter.com": [("EUR", Decimal("0.3"), 1, Decimal("0.3"))],
                               "(direct)": []}  # fmt: skip
    assert by("utm_campaigns") == {"fall": google}
    assert by("entry_pages") == {"/landing": google, "/pricing": [("EUR", Decimal("0.3"), 1, Decimal("0.3"))], "/": []}
    # v3 and v4 entered from DE and US: v3 converted without revenue; per visitor over DE's two.
    assert by("countries")["DE"] == [("EUR", Decimal("19.99"), 1, Decimal("9.995")), ("USD", Decimal("5.5"), 1,
                                                                                    Decimal("2.75"))]  # fmt: skip

    # Today, from the speed layer: the same visits a few minutes ago.
    now = int(time.time() * 1000)
    store = CounterStore(redis.Redis.from_url(cfg.redis_url), KeyLayout())
    assert store.apply(traffic(sid, now - 5 * 60_000), now).counted == len(ENTRIES) + len(CONVERSIONS)
    today = answer(**{"from": iso(now - 60 * 60_000), "to": iso(now + 60_000)})
    for goal in ("purchase", "donate"):
        assert as_decimals(today[goal]["revenue"]) == truth(goal), goal

    # A range over both: the lambda merge sums them.
    both = answer(**{"from": DAY, "to": iso(now + 60_000)})
    for goal in ("purchase", "donate"):
        assert as_decimals(both[goal]["revenue"]) == truth(goal, copies=2), goal


def iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat().replace("+00:00", "Z")
