"""Every reader of the speed layer over buckets filled past their caps (issue: busy minutes
broke the live view). Generated traffic overflows every capped dimension of a site's minutes
and hours, written to the real Redis (one, and three shards) with small caps; then every
realtime-reading API endpoint, the alert checks and the live and history dashboard views
answer 200, and their totals, ``(other)`` included, equal the events sent."""

from __future__ import annotations

import datetime as dt
import json
import random
import uuid
from collections import Counter
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

import pytest
import redis
from django.contrib.auth import get_user_model
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from alerts.measure import Measurer
from alerts.rules import RuleSpec
from dashboard.live import OUTPUTS as LIVE_OUTPUTS
from dashboard.models import SiteAccess
from footfall.config import Config
from footfall.models import Goal
from footfall.unreadable import Unreadable
from footfall.vocabulary import (
    API_DIMENSIONS,
    CUSTOM_EVENT_DIMENSIONS,
    REFPAGE_SEPARATOR,
    SESSION_DIMENSIONS,
    VALUE_OTHER,
)
from footfall_capture.events import SCHEMA_VERSION, Event, UserAgent, Utm, new_event_id
from query.runtime import get_conversions, get_health, get_service
from query.service import QuerySite
from realtime.health import worker_heartbeats
from realtime.keys import KeyLayout
from realtime.reads import RealtimeQueries
from realtime.store import CounterStore
from tests.integration.api.conftest import SiteKey, make_site
from tests.integration.dash_callbacks import post_callback
from tests.integration.realtime.conftest import shard_urls

DEVICES = ("desktop", "mobile", "tablet", "other")
REF_TYPES = ("search", "social", "email", "other")
# Every dimension the API breaks page views down by from the speed layer (entry pages need sessions).
VIEW_DIMENSIONS = [
    d for d, store in API_DIMENSIONS.items() if store not in (*SESSION_DIMENSIONS, *CUSTOM_EVENT_DIMENSIONS)
]


@dataclass(frozen=True)
class Shape:
    """What one example sends: caps, the minutes used, and how many distinct values each draws from."""

    minute_values: int
    hour_values: int
    minutes: tuple[int, ...]  # minutes before now's minute
    views_per_minute: int
    pool: int  # distinct values per dimension to draw from (above the caps, mostly)
    seed: int


shapes = st.builds(
    lambda cap, hour_extra, minutes, extra, pool_extra, seed: Shape(
        cap, cap + hour_extra, tuple(sorted(set(minutes))), cap + extra, cap + pool_extra, seed
    ),
    cap=st.integers(1, 4),
    hour_extra=st.integers(0, 4),
    # Recent minutes and minutes of earlier (whole) hours, so both minute and hour keys overflow.
    minutes=st.lists(st.integers(0, 150), min_size=1, max_size=4),
    extra=st.integers(1, 12),
    pool_extra=st.integers(1, 40),
    seed=st.integers(0, 2**16),
)


def traffic(site: str, shape: Shape, now_ms: int) -> list[Event]:
    """Page views with every dimension set, drawn from ``shape.pool`` values each; after each,
    an engagement report, and now and then a custom event with a property."""
    rng = random.Random(shape.seed)
    events: list[Event] = []
    first_minute = now_ms // 60_000
    for back in shape.minutes:
        start = (first_minute - back) * 60_000
        for i in range(shape.views_per_minute):
            ts = start + rng.randrange(0, 50_000)
            if ts > now_ms:
                ts = now_ms - 1
            n = lambda: rng.randrange(shape.pool)  # noqa: E731
            host = f"spam{n()}.example"
            view = Event(
                event_id=new_event_id(), site_id=site, type="pageview", ts=ts, received_at=ts, schema=SCHEMA_VERSION,
                url=f"https://site.example/p{n()}", host="site.example", path=f"/p{n()}",
                referrer=f"https://{host}/r{n()}", ref_domain=host, ref_type=REF_TYPES[n() % len(REF_TYPES)],
                utm=Utm(source=f"s{n()}", medium=f"m{n()}", campaign=f"c{n()}"),
                visitor_id=f"{rng.getrandbits(128):032x}",
                ua=UserAgent(browser=f"B{n()}", os=f"O{n()}", device=DEVICES[n() % len(DEVICES)]),
                country=chr(65 + n() % 26) + chr(65 + n() // 26 % 26),
            )  # fmt: skip
            events.append(view)
            report_ts = min(ts + 500, now_ms - 1) if ts < now_ms - 1 else ts
            events.append(Event(
                event_id=new_event_id(), site_id=site, type="engagement", ts=report_ts, received_at=report_ts,
                schema=SCHEMA_VERSION, url=view.url, host=view.host, path=view.path, referrer=view.referrer,
                ref_domain=view.ref_domain, visitor_id=view.visitor_id, ua=view.ua,
                props={"engaged_ms": 1000 + i, "scroll_depth": 50, "pageview_id": view.event_id},
            ))  # fmt: skip
            if i % 2 == 0:
                events.append(Event(
                    event_id=new_event_id(), site_id=site, type=f"ev{n()}", ts=ts, received_at=ts,
                    schema=SCHEMA_VERSION, visitor_id=view.visitor_id, props={"plan": f"v{n()}"},
                ))  # fmt: skip
    return events


@dataclass
class Truth:
    views: list[Event]
    custom: list[Event]
    engaged_ms: int

    @classmethod
    def of(cls, events: list[Event]) -> Truth:
        reports = [e for e in events if e.type == "engagement"]
        return cls(
            views=[e for e in events if e.type == "pageview"],
            custom=[e for e in events if e.type not in ("pageview", "engagement")],
            engaged_ms=sum(int(e.props["engaged_ms"]) for e in reports),  # type: ignore[index]
        )


@pytest.fixture(params=["one-redis", "shards"])
def clients(request: pytest.FixtureRequest, cfg: Config) -> list[redis.Redis]:
    if request.param == "one-redis":
        return [redis.Redis.from_url(cfg.redis_url)]
    return [redis.Redis.from_url(url) for url in shard_urls().split(",")]


@pytest.fixture
def readers(clients: list[redis.Redis], monkeypatch: pytest.MonkeyPatch) -> None:
    """The API's and the dashboard's query service read ``clients`` (their own reader object,
    so nothing it remembers, such as merged hours, leaks between examples)."""
    monkeypatch.setattr(get_service(), "rt", RealtimeQueries(CounterStore(clients)))


def signed_in(site_key: SiteKey) -> Client:
    name = f"u-{uuid.uuid4().hex[:8]}"
    account = get_user_model().objects.create_user(name)  # no password to hash: force_login signs in
    SiteAccess.objects.create(user=account, site=site_key.site)
    client = Client()
    client.force_login(account)
    return client


def ok(response) -> dict:
    assert response.status_code == 200, response.content[:400]
    return response.json()


def sums(rows: list[dict], metric: str = "pageviews") -> int:
    return sum(int(r[metric] or 0) for r in rows)


@pytest.mark.django_db
@settings(
    max_examples=6,
    deadline=None,
    derandomize=True,  # the same examples every run: CI must not meet a new one by chance
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(shape=shapes)
def test_every_reader_answers_over_the_caps(clients: list[redis.Redis], readers: None, shape: Shape) -> None:
    site_key = make_site(tz="UTC")
    site = site_key.site.site_id
    now = get_service().now()
    now_ms = int(now.timestamp() * 1000)
    events = traffic(site, shape, now_ms)
    store = CounterStore(clients, KeyLayout(minute_values=shape.minute_values, hour_values=shape.hour_values))
    for start in range(0, len(events), 97):  # several batches, as a worker applies them
        store.apply(events[start : start + 97], now_ms)
    truth = Truth.of(events)
    api = Client()
    window = {"from": (now - dt.timedelta(minutes=200)).isoformat(), "to": (now + dt.timedelta(minutes=1)).isoformat()}

    # The live view's endpoint: (other) rows, and flows from (other) to (other), add up.
    live = ok(site_key.get(api, "realtime", minutes=180, limit=100))
    assert live["pageviews"] == len(truth.views)
    assert sums(live["top_pages"]) == sums(live["top_referrers"]) == sums(live["flows"]) == len(truth.views)
    for flow in live["flows"]:
        assert (flow["referrer"] == VALUE_OTHER) == (flow["page"] == VALUE_OTHER)

    assert ok(site_key.get(api, "aggregate", **window))["results"]["pageviews"]["value"] == len(truth.views)
    series = ok(site_key.get(api, "timeseries", metric="pageviews", interval="minute", **window))
    assert sum(p["value"] or 0 for p in series["points"]) == len(truth.views)

    breakdowns: dict[str, list[dict]] = {}
    for dim in VIEW_DIMENSIONS:
        body = ok(site_key.get(api, f"breakdown/{dim}", limit=1000, **window))
        assert sums(body["results"]) == len(truth.views), dim
        breakdowns[dim] = body["results"]
        csv = site_key.get(api, f"breakdown/{dim}", limit=1000, format="csv", **window)
        assert csv.status_code == 200
        assert len(csv.content.decode().splitlines()) == len(body["results"]) + 1
    engaged = ok(site_key.get(api, "breakdown/pages", limit=1000, metrics="pageviews,engaged_time", **window))
    engaged_s = sum(r["engaged_time"] or 0 for r in engaged["results"])  # each row rounded to the millisecond
    assert abs(engaged_s * 1000 - truth.engaged_ms) < len(engaged["results"])
    events_body = ok(site_key.get(api, "breakdown/events", limit=1000, **window))
    assert sums(events_body["results"], "events") == len(truth.custom)

    # A referrer's pages and a page's referrers: (other) holds the pairs past the caps, so
    # the rows of a referrer that kept its own place add up to its page views.
    true_refs = Counter(e.ref_domain for e in truth.views)
    for row in breakdowns["referrers"][:5]:
        pages = ok(site_key.get(api, f"referrers/{quote(row['value'], safe='')}/pages", limit=1000, **window))
        if true_refs.get(row["value"]) == row["pageviews"]:
            assert sums(pages["results"]) == row["pageviews"], row
        else:
            assert sums(pages["results"]) >= row["pageviews"], row
    true_pages = Counter(e.path for e in truth.views)
    for row in breakdowns["pages"][:5]:
        if row["value"] == VALUE_OTHER:
            continue  # not a path: the API takes paths only here
        refs = ok(site_key.get(api, f"pages/{row['value'].lstrip('/')}/referrers", limit=1000, **window))
        if true_pages.get(row["value"]) == row["pageviews"]:
            assert sums(refs["results"]) == row["pageviews"], row

    # Custom event properties, and goals (which match no (other) value: at most the truth).
    name = truth.custom[0].type if truth.custom else "ev0"
    props = ok(site_key.get(api, f"events/{name}/properties/plan", limit=1000, **window))
    assert sums(props["results"], "events") <= sum(1 for e in truth.custom if e.type == name)
    Goal.objects.create(site=site_key.site, name="Page", kind="page", path=truth.views[0].path)
    Goal.objects.create(site=site_key.site, name="Event", kind="event", event=name)
    goals = ok(site_key.get(api, "goals", **window))
    for goal in goals["results"]:
        assert goal["events"] <= (
            sum(1 for e in truth.views if e.path == truth.views[0].path)
            if goal["name"] == "Page"
            else sum(1 for e in truth.custom if e.type == name)
        )

    # Trends and alerts read the same buckets.
    info = QuerySite(site, "UTC")
    measurer = Measurer(get_service(), get_conversions(), get_health(), now)
    for scope, value in (("", ""), ("page", ""), ("ref", ""), ("ref", VALUE_OTHER), ("page", VALUE_OTHER)):
        measurer.read(RuleSpec(site, "spike", "spike", 3.0, window_minutes=10, scope=scope, value=value), info)

    # The dashboard's live and history views, through Dash as a browser posts them.
    browser = signed_in(site_key)
    shown = post_callback(browser, [(o.component_id, o.component_property) for o in LIVE_OUTPUTS],
                 [("live-tick", "n_intervals", 1), ("site", "value", site), ("live-minutes", "value", 60)])  # fmt: skip
    assert shown["live-error"]["hidden"] is True
    rows = shown["live-top-pages"]["data"] + shown["live-top-refs"]["data"] + shown["live-rising"]["data"]
    nodes = shown["live-flows"]["figure"]["data"][0]["node"]["label"] if shown["live-flows"]["figure"]["data"] else []
    other = any(r["value"] == "other values" for r in rows) or "other values" in nodes
    assert shown["live-other-note"]["hidden"] is not other  # the note is shown wherever "other values" are
    store = {"site": site, "first": (now - dt.timedelta(days=1)).date().isoformat(), "last": now.date().isoformat(),
             "compare": False, "notes": []}  # fmt: skip
    # Pages, and one more table each example (the API's breakdowns above cover every one each time).
    for dim in dict.fromkeys(("pages", VIEW_DIMENSIONS[shape.seed % len(VIEW_DIMENSIONS)])):
        table = post_callback(
            browser,
            [("hist-table", "data"), ("hist-table", "columns"), ("hist-table", "active_cell"),
             ("hist-table", "selected_cells"), ("hist-table", "page_current"), ("hist-table-note", "children"),
             ("hist-table-note", "hidden"), ("hist-table-caption", "children")],
            [("hist-range", "data", store), ("hist-dim", "value", dim), ("hist-filter", "data", None),
             ("hist-goal-filter", "data", None)],
        )  # fmt: skip
        rows = table["hist-table"]["data"]
        if len(rows) < 100:  # the table shows 100 rows at most (the CSV has them all)
            assert sums(rows) == len(truth.views), dim
        other = [r for r in rows if r["id"] == VALUE_OTHER]
        assert all(r["value"] == "other values" for r in other)
        assert (not other) or "other values" in table["hist-table-note"]["children"]


@pytest.mark.django_db
def test_unreadable_stored_values_are_skipped_and_counted(
    cfg: Config, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A pair without its separator, a member that is not UTF-8, a count that is not a number,
    a stray stats field and a heartbeat that is not JSON: every reader answers, and says once
    what it skipped."""
    client = redis.Redis.from_url(urlsplit(cfg.redis_url)._replace(path="/12").geturl())
    client.flushdb()
    store = CounterStore([client])
    monkeypatch.setattr(get_service(), "rt", RealtimeQueries(store))
    site_key = make_site(tz="UTC")
    site, layout = site_key.site.site_id, store.layout
    minute = int(get_service().now().timestamp()) // 60 - 1
    client.zadd(layout.top(site, minute, "refpage"), {"stray": 3, f"a.com{REFPAGE_SEPARATOR}/x": 2, VALUE_OTHER: 4})
    client.zadd(layout.top(site, minute, "page"), {b"/\xff\xfe": 1, "/x": 2})
    client.hset(layout.counters(site, minute), mapping={"pageviews": "not a number", "events": 7})
    client.hset(layout.stats, mapping={"events": 5, "bogus": "x"})
    client.hset(layout.workers, mapping={"w1": "{not json", "w2": json.dumps({"at": 1}), "w3": "[]"})
    unreadable = Unreadable()  # this test's own counts and log lines
    monkeypatch.setattr("realtime.reads.skip", unreadable.skip)
    monkeypatch.setattr("realtime.store.skip", unreadable.skip)
    monkeypatch.setattr("realtime.health.skip", unreadable.skip)
    with caplog.at_level("WARNING", logger="footfall.unreadable"):
        live = ok(site_key.get(Client(), "realtime", minutes=5))
        assert store.stats() == {"events": 5}
        assert worker_heartbeats(store, 0) == {}
    assert live["flows"] == [
        {"referrer": VALUE_OTHER, "page": VALUE_OTHER, "pageviews": 4},
        {"referrer": "a.com", "page": "/x", "pageviews": 2},
    ]
    assert [r["value"] for r in live["top_pages"]] == ["/x"]
    assert live["pageviews"] == 0
    # Counted each time a reader meets them (the live view reads pages and counters twice).
    skipped = unreadable.totals()
    assert set(skipped) == {"refpage value", "page value", "count", "stats field", "worker heartbeat"}
    assert skipped["worker heartbeat"] == 3
    assert len(caplog.records) == 5  # one line per kind
    client.flushdb()


@pytest.mark.django_db
def test_engaged_time_of_values_counted_under_other_is_not_lost(cfg: Config, monkeypatch: pytest.MonkeyPatch) -> None:
    """Page views and engagement reports fill their capped sets apart: a page whose views went to
    (other) may hold a place for its engaged time, and the other way round. Either way the rows'
    engaged time adds up to the site's."""
    client = redis.Redis.from_url(urlsplit(cfg.redis_url)._replace(path="/13").geturl())
    client.flushdb()
    monkeypatch.setattr(get_service(), "rt", RealtimeQueries(CounterStore([client])))
    site_key = make_site(tz="UTC")
    site = site_key.site.site_id
    now = get_service().now()
    minute = (int(now.timestamp()) // 60 - 1) * 60_000
    store = CounterStore([client], KeyLayout(minute_values=1, hour_values=1))

    def view(path: str, ts: int) -> Event:
        return Event(event_id=new_event_id(), site_id=site, type="pageview", ts=ts, received_at=ts,
                     schema=SCHEMA_VERSION, url=f"https://site.example{path}", host="site.example", path=path,
                     visitor_id=f"{ts:032x}")  # fmt: skip

    def report(of: Event, engaged_ms: int) -> Event:
        return Event(event_id=new_event_id(), site_id=site, type="engagement", ts=of.ts + 1, received_at=of.ts + 1,
                     schema=SCHEMA_VERSION, url=of.url, host=of.host, path=of.path, visitor_id=of.visitor_id,
                     props={"engaged_ms": engaged_ms, "pageview_id": of.event_id})  # fmt: skip

    a, b = view("/a", minute + 1000), view("/b", minute + 2000)
    store.apply([a], now_ms := int(now.timestamp() * 1000))  # /a holds the page views' place
    store.apply([report(b, 7000)], now_ms)  # /b holds engagement's place
    store.apply([b, report(a, 5000)], now_ms)  # /b's views and /a's time go to (other)
    window = {"from": (now - dt.timedelta(minutes=10)).isoformat(), "to": (now + dt.timedelta(minutes=1)).isoformat()}
    body = ok(site_key.get(Client(), "breakdown/pages", metrics="pageviews,engaged_time", **window))
    rows = {r["value"]: (r["pageviews"], r["engaged_time"]) for r in body["results"]}
    assert rows == {"/a": (1, 0.0), VALUE_OTHER: (1, 12.0)}  # /b's 7 s and /a's 5 s: nothing lost
    client.flushdb()
