"""The speed layer's bounds over real Redis: capped value sets, the dedup window, the
offsets each step checks, and counters spread over shards (two Redis databases here)."""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Iterator
from urllib.parse import urlsplit

import msgspec
import pytest
import redis

from footfall.config import Config
from footfall.demo import DemoTraffic
from footfall.vocabulary import VALUE_OTHER
from realtime.keys import KeyLayout
from realtime.reads import RealtimeQueries
from realtime.store import CounterStore, OffsetsMoved


def site_id() -> str:
    return f"sb-{uuid.uuid4().hex[:8]}"


def test_a_full_minute_counts_new_values_and_their_visitors_under_other(cfg: Config) -> None:
    """Three values a minute at most: the busiest three of the first batch keep their places,
    later new values go to (other) with their visitors; page views still add up."""
    store = CounterStore(redis.Redis.from_url(cfg.redis_url), KeyLayout(minute_values=3, hour_values=3))
    site, now = site_id(), int(time.time() * 1000)
    minute_start = (now // 60_000 - 2) * 60_000
    base = DemoTraffic(site_id=site, seed=1).event(minute_start)
    first = [("/a", 5), ("/b", 4), ("/c", 3), ("/d", 1)]
    later = [("/a", 1), ("/e", 2)]

    def views(pages: list[tuple[str, int]], offset: int) -> list:
        made = []
        for path, n in pages:
            for i in range(n):
                made.append(msgspec.structs.replace(
                    base, event_id=str(uuid.uuid4()), path=path, ts=minute_start + offset + i,
                    visitor_id=f"{len(made) + offset:016x}",
                ))  # fmt: skip
        return made

    store.apply(views(first, 0), now)
    store.apply(views(later, 1000), now)
    queries = RealtimeQueries(store)
    start, end = minute_start, minute_start + 60_000
    ranking = dict(queries.ranking(site, "page", start, end, limit=10))
    assert ranking == {"/a": 6, "/b": 4, "/c": 3, VALUE_OTHER: 3}  # /d (first batch, 4th) and /e
    assert sum(ranking.values()) == queries.totals(site, start, end)["pageviews"] == 16
    assert queries.visitors(site, "page", start, end, [VALUE_OTHER]) == [3]


def test_a_repeat_is_caught_within_the_window_and_counted_again_after_it(cfg: Config) -> None:
    """Marks live for the dedup window (at least one, at most two): a repeat within it counts
    nothing; a repeat after two windows is counted again (the batch layer removes it)."""
    layout = KeyLayout(retention_s=48 * 3600, dedup_s=3600)
    store = CounterStore(redis.Redis.from_url(cfg.redis_url), layout)
    site, now = site_id(), int(time.time() * 1000)
    event = DemoTraffic(site_id=site, seed=2).event(now - 60_000)
    assert store.apply([event], now).counted == 1
    assert store.apply([event], now + 3_599_000).duplicates == 1  # still inside the window
    later = (layout.dedup_generation(now) + 2) * 3_600_000
    assert 0 < store.client.ttl(layout.dedup(site, layout.dedup_generation(now))) <= 2 * 3600
    assert store.apply([event], later).counted == 1  # two windows on: neither generation it checks holds it


def test_a_step_writes_nothing_when_the_shards_offsets_moved(cfg: Config) -> None:
    store = CounterStore(redis.Redis.from_url(cfg.redis_url), KeyLayout())
    site, now, group = site_id(), int(time.time() * 1000), f"g-{uuid.uuid4().hex[:8]}"
    gen = DemoTraffic(site_id=site, seed=3)
    store.write(0, [gen.event(now - 1000)], now, group, {"t:0": (None, 10)})
    with pytest.raises(OffsetsMoved) as moved:
        store.write(0, [gen.event(now - 900)], now, group, {"t:0": (5, 12), "t:1": (None, 3)})
    assert moved.value.recorded == {"t:0": 10}
    assert store.recorded_offsets(group) == [{"t:0": 10}]
    assert RealtimeQueries(store).totals(site, now - 60_000, now + 60_000)["pageviews"] == 1
    store.write(0, [gen.event(now - 800)], now, group, {"t:0": (10, 12), "t:1": (None, 3)})
    assert store.recorded_offsets(group) == [{"t:0": 12, "t:1": 3}]


@pytest.fixture
def two_shards(cfg: Config) -> Iterator[list[redis.Redis]]:
    """Databases 5 and 6 of the test Redis, flushed: two shards as far as the store can tell."""
    url = urlsplit(cfg.redis_url)
    clients = [redis.Redis.from_url(url._replace(path=f"/{db}").geturl()) for db in (5, 6)]  # a URL's db wins
    for client in clients:
        client.flushdb()
    yield clients
    for client in clients:
        client.flushdb()


def test_sharded_counts_equal_one_redis(cfg: Config, two_shards: list[redis.Redis]) -> None:
    """Each visitor's events go to one shard; every read sums the shards and equals the
    one-Redis answer (visitors: each shard's estimate over disjoint visitors, summed)."""
    site, now = site_id(), int(time.time() * 1000)
    gen = DemoTraffic(site_id=site, visitors=400, seed=4)
    events = [gen.event(now - 40 * 60_000 + i * 600) for i in range(4000)]
    sharded, single = CounterStore(two_shards), CounterStore(redis.Redis.from_url(cfg.redis_url), KeyLayout())
    parts = sharded.split(events)
    assert all(parts)
    assert sum(map(len, parts)) == len(events)
    by_visitor = {e.visitor_id: shard for shard, part in enumerate(parts) for e in part}
    assert all(by_visitor[e.visitor_id] == sharded.shard_of(e) for e in events)
    result = sharded.apply(events + events[:100], now)
    assert (result.counted, result.duplicates, result.round_trips) == (4000, 100, 2)
    single.apply(events, now)
    a, b = RealtimeQueries(sharded), RealtimeQueries(single)
    start, end = now - 3_600_000, now + 60_000
    assert a.ranking(site, "page", start, end, 100) == b.ranking(site, "page", start, end, 100)
    assert a.flows(site, start, end) == b.flows(site, start, end)
    assert a.timeseries(site, "pageviews", start, end) == b.timeseries(site, "pageviews", start, end)
    truth = len({e.visitor_id for e in events})
    assert abs(a.totals(site, start, end)["visitors"] - truth) <= 0.03 * truth
    assert a.concurrent(site, now) == b.concurrent(site, now)
    pages = Counter(e.path for e in events).most_common(3)
    for (path, _), uv in zip(pages, a.visitors(site, "page", start, end, [p for p, _ in pages]), strict=True):
        true_uv = len({e.visitor_id for e in events if e.path == path})
        assert abs(uv - true_uv) <= 0.03 * true_uv + 1


def test_every_key_of_a_site_expires(cfg: Config) -> None:
    """Each bucket key is written with its expiry, including a value's visitor sketch made
    when the value first came without visitors and got some in a later batch."""
    store = CounterStore(redis.Redis.from_url(cfg.redis_url), KeyLayout(minute_values=2))
    site, now = site_id(), int(time.time() * 1000)
    minute_start = (now // 60_000 - 1) * 60_000
    gen = DemoTraffic(site_id=site, visitors=30, seed=5)
    anonymous = msgspec.structs.replace(gen.event(minute_start + 1_000), path="/quiet", visitor_id=None)
    store.apply([anonymous], now)
    later = [msgspec.structs.replace(gen.event(minute_start + 2_000 + i), path="/quiet") for i in range(3)]
    store.apply(later + [gen.event(minute_start + 3_000 + i) for i in range(200)], now)
    keys = list(store.client.scan_iter(match=store.layout.site_pattern(site), count=1000))
    keys += list(store.client.scan_iter(match=store.layout.dedup_site_pattern(site), count=1000))
    assert len(keys) > 20
    assert [k for k in keys if store.client.ttl(k) < 0] == []
    sketch = store.layout.dim_visitors(site, minute_start // 60_000, "page", "/quiet")
    assert store.client.pfcount(sketch) == len({e.visitor_id for e in later})


def test_a_big_batch_goes_in_one_step_whatever_its_lists(cfg: Config) -> None:
    """20,000 page views of one page in one minute by 20,000 visitors: every list (marks,
    a value's visitors, last-seen times) is longer than one Lua call takes, and is split
    within the one step."""
    store = CounterStore(redis.Redis.from_url(cfg.redis_url), KeyLayout())
    site, now = site_id(), int(time.time() * 1000)
    minute_start = (now // 60_000 - 1) * 60_000
    base = DemoTraffic(site_id=site, seed=6).event(minute_start)
    events = [
        msgspec.structs.replace(base, event_id=str(uuid.uuid4()), ts=minute_start + i % 60_000, visitor_id=f"{i:016x}")
        for i in range(20_000)
    ]
    result = store.apply(events, now)
    assert (result.counted, result.round_trips) == (20_000, 1)
    queries = RealtimeQueries(store)
    start, end = minute_start, minute_start + 60_000
    assert queries.ranking(site, "page", start, end) == [(base.path, 20_000)]
    (visitors,) = queries.visitors(site, "page", start, end, [base.path])
    assert abs(visitors - 20_000) <= 0.03 * 20_000
    assert queries.concurrent(site, now) == 20_000  # all seen within the last two minutes
    assert store.apply(events[:10], now).duplicates == 10
