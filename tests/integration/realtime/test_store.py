"""The counter store and its queries over real Redis."""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable

import msgspec
import redis

from footfall.demo import DemoTraffic
from footfall_capture.events import Event, UserAgent
from realtime.keys import bucket_of
from realtime.reads import RealtimeQueries
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


def _from_lobsters(gen: DemoTraffic, start_ms: int, every_ms: int, count: int = 200) -> list[Event]:
    """``count`` of ``gen``'s events referred by lobste.rs, one every ``every_ms`` from ``start_ms``."""
    return [
        msgspec.structs.replace(gen.event(start_ms + i * every_ms), referrer="https://lobste.rs/s/x",
                                ref_domain="lobste.rs", ref_type="social")
        for i in range(count)
    ]  # fmt: skip


def test_trend_detector_ranks_a_referrer_spike_first(store: CounterStore) -> None:
    """Three hours of steady traffic, then one referrer surges in the last ten minutes."""
    site = f"st-{uuid.uuid4().hex[:8]}"
    now = int(time.time() * 1000)
    gen = DemoTraffic(site_id=site, visitors=400, seed=8)
    steady = [gen.event(now - 190 * 60_000 + i * 2_000) for i in range(190 * 30)]
    spike = _from_lobsters(gen, now - 9 * 60_000, 2_000)
    store.apply(steady + spike, now)
    rising = RealtimeQueries(store).rising(site, "ref", now)
    assert rising[0].value == "lobste.rs"
    assert rising[0].z > 5


class _CountingClient:
    """The real Redis client, counting the pipelines it hands out (one round trip each) and
    the commands sent through them."""

    def __init__(self, client: redis.Redis) -> None:
        self.client, self.pipelines, self.commands = client, 0, 0
        self.names: Counter[str] = Counter()

    def pipeline(self, transaction: bool = True) -> redis.client.Pipeline:
        self.pipelines += 1
        pipe = self.client.pipeline(transaction=transaction)
        execute = pipe.execute

        def counted_execute(raise_on_error: bool = True) -> list:
            self.commands += len(pipe.command_stack)
            self.names.update(str(args[0]).upper() for args, _options in pipe.command_stack)
            return execute(raise_on_error)

        pipe.execute = counted_execute  # type: ignore[method-assign]
        return pipe

    def __getattr__(self, name: str) -> object:
        return getattr(self.client, name)


def test_whole_hours_are_read_from_hour_keys_with_the_minutes_answers(store: CounterStore) -> None:
    """Series and totals over whole UTC hours read the hour keys (a few reads, not one per
    minute) and answer exactly what the events add up to; counters written before hour keys
    existed (``hours_from`` ahead of them) are still answered from their minutes."""
    site = f"st-{uuid.uuid4().hex[:8]}"
    now = int(time.time() * 1000)
    gen = DemoTraffic(site_id=site, visitors=120, seed=10)
    googlebot = UserAgent(browser="Googlebot", device="bot", is_bot=True)
    events = [  # mostly human page views, some custom events and some bots'
        msgspec.structs.replace(e, ua=googlebot) if i % 7 == 0 else
        msgspec.structs.replace(e, type="signup") if i % 5 == 0 else e
        for i, e in enumerate(gen.event(now - 170 * 60_000 + i * 5_000) for i in range(2000))
    ]  # fmt: skip
    store.apply(events, now)
    # All events; the range starts on a UTC hour so that it holds at least two whole hours
    # whatever the time of day (a start a few minutes past an hour left one whole hour and
    # 112 minutes, and the comparison of round trips below failed then).
    start, end = (now - 171 * 60_000) // 3_600_000 * 3_600_000, (now // 60_000 + 1) * 60_000

    def bot(e: Event) -> bool:
        return e.ua is not None and e.ua.is_bot

    def pageview(e: Event) -> bool:
        return e.type == "pageview" and not bot(e)

    def hourly(keep: Callable[[Event], bool]) -> list[tuple[int, int]]:
        counts = Counter(e.ts // 3_600_000 for e in events if keep(e))
        first = start // 3_600_000
        return [(max(h * 3_600_000, start), counts.get(h, 0)) for h in range(first, -(-end // 3_600_000))]

    def answers(queries: RealtimeQueries) -> tuple[object, ...]:
        return (
            queries.timeseries(site, "pageviews", start, end, "hour"),
            queries.timeseries(site, "events", start, end, "hour"),
            queries.timeseries(site, "bot_events", start, end, "hour"),
            queries.timeseries(site, "visitors", start, end, "hour"),
            queries.totals(site, start, end),
            queries.spans(site, "pageviews", [(start, start + 90 * 60_000), (start + 90 * 60_000, end)]),
            queries.top(site, "page", start, end, 50),
            queries.timeseries(site, "pageviews", start, end, "hour", filter_=("page", "/pricing")),
            queries.timeseries(site, "visitors", start, end, "hour", filter_=("ref", "google.com")),
            queries.referrer_pages(site, "google.com", start, end, 50),
        )

    store.client.set(store.layout.hours_from, 0)  # every counter of this Redis has its hour keys
    queries = RealtimeQueries(store)
    assert queries.hours_from() == 0
    counting = _CountingClient(store.client)
    queries.clients = (counting,)  # type: ignore[assignment]
    from_hours = answers(queries)
    pageviews, humans, bots, visitors, totals, spans, top, pricing, _, from_google = from_hours
    assert {row.value: row.pageviews for row in top} == Counter(e.path for e in events if pageview(e))
    assert pricing == hourly(lambda e: pageview(e) and e.path == "/pricing")
    google = Counter(e.path for e in events if pageview(e) and e.ref_domain == "google.com")
    assert {row.value: row.pageviews for row in from_google} == google
    assert pageviews == hourly(pageview)
    assert humans == hourly(lambda e: not bot(e))
    assert bots == hourly(bot)
    assert totals == {
        "pageviews": sum(map(pageview, events)),
        "events": sum(not bot(e) for e in events),
        "bot_events": sum(map(bot, events)),
        "visitors": totals["visitors"],
    }
    assert abs(totals["visitors"] - len({e.visitor_id for e in events if not bot(e)})) <= 3  # HLL
    assert spans == [sum(1 for e in events if pageview(e) and a <= e.ts < b) for a, b in
                     [(start, start + 90 * 60_000), (start + 90 * 60_000, end)]]  # fmt: skip
    uv_truth = hourly_visitors = Counter()
    for h in {e.ts // 3_600_000 for e in events if not bot(e)}:
        hourly_visitors[h] = len({e.visitor_id for e in events if not bot(e) and e.ts // 3_600_000 == h})
    for t, uv in visitors:
        assert abs(uv - uv_truth[t // 3_600_000]) <= 0.03 * uv_truth[t // 3_600_000] + 1  # HLL

    # The same Redis as an older version left it: minute keys only, hours_from ahead.
    hour_keys = [k for k in store.client.scan_iter(match=f"ff:rt:{site}:h*") if bucket_of(k.decode())]
    assert len(hour_keys) > 4 * 3  # counters, visitors and rankings of 3-4 hours
    store.client.delete(*hour_keys)
    store.client.set(store.layout.hours_from, now // 3_600_000 + 1)
    try:
        older = RealtimeQueries(store)
        by_minute = _CountingClient(store.client)
        older.clients = (by_minute,)  # type: ignore[assignment]
        assert answers(older) == from_hours
        assert counting.commands < by_minute.commands / 2
    finally:
        store.client.set(store.layout.hours_from, 0)


def test_the_first_batch_sets_hours_from(store: CounterStore) -> None:
    """A store with counts of a version without hour keys trusts hour keys from the next hour
    on; an empty store from the start."""
    saved = store.client.dump(store.layout.stats)
    gen = DemoTraffic(site_id=f"st-{uuid.uuid4().hex[:8]}", seed=11)
    now = int(time.time() * 1000)
    try:
        store.client.delete(store.layout.hours_from)
        store.apply([gen.event(now - 1000)], now)
        assert store.client.get(store.layout.hours_from) == str(now // 3_600_000 + 1).encode()
        store.client.delete(store.layout.hours_from, store.layout.stats)
        store.apply([gen.event(now - 2000)], now)
        assert store.client.get(store.layout.hours_from) == b"0"
    finally:
        store.client.set(store.layout.hours_from, 0)
        if saved is not None:
            store.client.restore(store.layout.stats, 0, saved, replace=True)


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
    queries.live(site, start, end, now, limit=5, flows=12)  # the first may load the sums script
    counting = _CountingClient(store.client)
    queries.clients = (counting,)  # type: ignore[assignment]
    view = queries.live(site, start, end, now, limit=5, flows=12)
    assert counting.pipelines == 2
    # Visitors of the range (1) and of the 5 top pages and 5 top referrers: none for flows,
    # which show page views only.
    assert counting.names["PFCOUNT"] == 1 + 5 + 5
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


def test_trend_baselines_are_summed_once_a_minute_and_late_events_count_the_next_minute(
    store: CounterStore,
) -> None:
    """A second trend read in the same minute sends only the recent block's ZUNION and
    answers the same; an event arriving late into a baseline block changes the answer of
    the next minute's read; without memory every read sums all 19 blocks."""
    site = f"st-{uuid.uuid4().hex[:8]}"
    now = (int(time.time() * 1000) // 60_000) * 60_000 + 30_000  # mid-minute: "now + 60 s" is the next
    gen = DemoTraffic(site_id=site, visitors=400, seed=8)
    steady = [gen.event(now - 190 * 60_000 + i * 2_000) for i in range(190 * 30)]
    spike = _from_lobsters(gen, now - 9 * 60_000, 2_000)
    store.apply(steady + spike, now)
    remembering, forgetting = RealtimeQueries(store), RealtimeQueries(store, baseline_memory_items=0)

    def commands(queries: RealtimeQueries, at_ms: int) -> tuple[int, list]:
        counting = _CountingClient(store.client)
        queries.clients = (counting,)  # type: ignore[assignment]
        try:
            answer = queries.rising(site, "ref", at_ms)
            return counting.commands, answer
        finally:
            queries.clients = store.shards

    first = remembering.rising(site, "ref", now)
    assert first[0].value == "lobste.rs"
    sent, again = commands(remembering, now + 20_000)  # the same minute
    assert (sent, again) == (1, first)
    assert commands(forgetting, now + 20_000) == (19, first)

    # The same referrer was as busy two hours ago (events that arrive late): not rising any more.
    late = _from_lobsters(gen, now - 120 * 60_000, 3_000)
    store.apply(late, now)
    assert commands(remembering, now + 25_000)[1] == first  # within the minute: remembered sums
    sent, next_minute = commands(remembering, now + 60_000)
    assert sent == 19
    assert next_minute == forgetting.rising(site, "ref", now + 60_000)
    assert next_minute != first  # the late events are in the baseline now
    # Ten minutes on, the blocks line up with remembered ones again: summed afresh all the same.
    assert commands(remembering, now + 600_000)[0] == 19
