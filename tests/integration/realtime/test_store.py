"""The counter store and its queries over real Redis."""

from __future__ import annotations

import time
import uuid

import msgspec
import redis

from footfall.demo import DemoTraffic
from realtime.queries import RealtimeQueries
from realtime.store import CounterStore


def test_reapplying_a_batch_changes_nothing(store: CounterStore) -> None:
    """A redelivered batch (same event ids) finds its dedup marks: nothing is doubled."""
    site = f"st-{uuid.uuid4().hex[:8]}"
    now = int(time.time() * 1000)
    gen = DemoTraffic(site_id=site, seed=3)
    batch = [gen.event(now - 120_000 + i * 100) for i in range(300)]
    first = store.apply(batch, now)
    again = store.apply(batch, now)
    assert (first.counted, first.duplicates, first.round_trips) == (300, 0, 1)
    assert (again.counted, again.duplicates) == (0, 300)
    overlap = store.apply([*batch[:50], gen.event(now - 1000)], now)
    assert (overlap.counted, overlap.duplicates, overlap.round_trips) == (1, 50, 2)
    assert RealtimeQueries(store).totals(site, now - 3_600_000, now + 60_000)["pageviews"] == 301


def test_one_round_trip_per_batch(store: CounterStore) -> None:
    site = f"st-{uuid.uuid4().hex[:8]}"
    now = int(time.time() * 1000)
    gen = DemoTraffic(site_id=site, seed=4)
    result = store.apply([gen.event(now - i * 10) for i in range(5000)], now)
    assert result.round_trips == 1


def test_referrer_page_flows_and_concurrent_visitors(store: CounterStore) -> None:
    site = f"st-{uuid.uuid4().hex[:8]}"
    now = int(time.time() * 1000)
    gen = DemoTraffic(site_id=site, visitors=50, seed=5)
    events = [gen.event(now - 20 * 60_000 + i * 600) for i in range(2000)]
    store.apply(events, now)
    queries = RealtimeQueries(store)
    start, end = now - 3_600_000, now + 60_000
    google = {r.value: r.pageviews for r in queries.referrer_pages(site, "google.com", start, end, limit=100)}
    expected: dict[str, int] = {}
    for e in events:
        if e.ref_domain == "google.com":
            expected[e.path] = expected.get(e.path, 0) + 1
    assert google == expected
    home = {r.value: r.pageviews for r in queries.page_referrers(site, "/", start, end, limit=100)}
    assert sum(home.values()) == sum(1 for e in events if e.path == "/")
    recent_visitors = {e.visitor_id for e in events if e.ts >= now - 5 * 60_000}
    assert queries.concurrent(site, now) == len(recent_visitors)


def test_hourly_series_and_filters(store: CounterStore) -> None:
    site = f"st-{uuid.uuid4().hex[:8]}"
    now = int(time.time() * 1000)
    gen = DemoTraffic(site_id=site, seed=6)
    events = [gen.event(now - 150 * 60_000 + i * 9_000) for i in range(1000)]
    store.apply(events, now)
    queries = RealtimeQueries(store)
    start, end = (now - 3 * 3_600_000) // 3_600_000 * 3_600_000, now + 60_000
    hourly = queries.timeseries(site, "pageviews", start, end, interval="hour")
    assert sum(v for _, v in hourly) == 1000
    assert all(t % 3_600_000 == 0 for t, _ in hourly)
    pricing = queries.timeseries(site, "pageviews", start, end, interval="hour", filter_=("page", "/pricing"))
    assert sum(v for _, v in pricing) == sum(1 for e in events if e.path == "/pricing")


def test_trend_detector_ranks_a_referrer_spike_first(store: CounterStore) -> None:
    """Three hours of steady traffic, then one referrer surges in the last ten minutes."""
    site = f"st-{uuid.uuid4().hex[:8]}"
    now = int(time.time() * 1000)
    gen = DemoTraffic(site_id=site, visitors=400, seed=8)
    steady = [gen.event(now - 190 * 60_000 + i * 2_000) for i in range(190 * 30)]
    spike = [
        msgspec.structs.replace(gen.event(now - 9 * 60_000 + i * 2_000), referrer="https://lobste.rs/s/x",
                                ref_domain="lobste.rs", ref_type="social")
        for i in range(200)
    ]  # fmt: skip
    store.apply(steady + spike, now)
    rising = RealtimeQueries(store).rising(site, "ref", now)
    assert rising[0].value == "lobste.rs"
    assert rising[0].z > 5


class _CountingClient:
    """The real Redis client, counting the pipelines it hands out (one round trip each)."""

    def __init__(self, client: redis.Redis) -> None:
        self.client, self.pipelines = client, 0

    def pipeline(self, transaction: bool = True) -> redis.client.Pipeline:
        self.pipelines += 1
        return self.client.pipeline(transaction=transaction)


def test_live_view_equals_the_single_reads_in_two_round_trips(store: CounterStore) -> None:
    """``live`` (what the dashboard polls) answers exactly what the separate queries answer."""
    site = f"st-{uuid.uuid4().hex[:8]}"
    now = int(time.time() * 1000)
    gen = DemoTraffic(site_id=site, visitors=300, seed=9)
    steady = [gen.event(now - 190 * 60_000 + i * 4_000) for i in range(190 * 15)]
    spike = [
        msgspec.structs.replace(gen.event(now - 9 * 60_000 + i * 3_000), path="/launch", url="https://x/launch")
        for i in range(150)
    ]
    store.apply(steady + spike, now)
    queries = RealtimeQueries(store)
    end = (now // 60_000 + 1) * 60_000  # whole minutes, as the API asks
    start = end - 30 * 60_000
    counting = _CountingClient(store.client)
    queries.client = counting  # type: ignore[assignment]
    view = queries.live(site, start, end, now, limit=5, flows=12)
    assert counting.pipelines == 2
    queries.client = store.client
    assert view.pageviews_per_minute == queries.timeseries(site, "pageviews", start, end, "minute")
    assert view.totals == queries.totals(site, start, end)
    assert view.concurrent == queries.concurrent(site, now)
    assert view.top_pages == queries.top(site, "page", start, end, 5)
    assert view.top_referrers == queries.top(site, "ref", start, end, 5)
    assert view.flows == queries.flows(site, start, end, 12)
    assert len(view.flows) == 12
    assert view.rising_pages == queries.rising(site, "page", now, limit=5)
    assert view.rising_pages[0].value == "/launch"
    assert view.rising_referrers == queries.rising(site, "ref", now, limit=5)
    assert view.totals["pageviews"] == sum(1 for e in steady + spike if start <= e.ts < end)
