"""The memory bench's traffic: lazy, in event-time order, its spam distinct; the stack's Redis knobs mirrored."""

from __future__ import annotations

import itertools
from pathlib import Path

from bench.realtime_memory import batches, event_spammed, stack_redis_options, traffic
from footfall.demo import DemoTraffic


def test_spam_pages_and_referrers_are_distinct_and_spread_evenly() -> None:
    events = list(traffic(DemoTraffic(site_id="s", visitors=50, seed=1), 1_000_000_000_000, 10, 1000, spam=100))
    spam = [i for i, e in enumerate(events) if e.path and e.path.startswith("/offer/")]
    assert len(spam) == 100
    assert len({events[i].path for i in spam}) == len({events[i].referrer for i in spam}) == 100
    assert {b - a for a, b in itertools.pairwise(spam)} == {10}
    assert all(events[i].url == f"https://{events[i].host}{events[i].path}" for i in spam)


def test_event_spam_names_values_and_engaged_pages_are_distinct() -> None:
    """The events mix: half its spam custom events of names and property values no other has,
    half engagement reports on pages and from referrer URLs no other has."""
    gen = DemoTraffic(site_id="s", visitors=50, seed=1)
    events = list(traffic(gen, 1_000_000_000_000, 10, 1000, spam=100, spam_event=event_spammed))
    custom = [e for e in events if e.type.startswith("spam-")]
    reports = [e for e in events if e.type == "engagement"]
    assert len(custom) == len(reports) == 50
    assert len({e.type for e in custom}) == len({e.props["plan"] for e in custom}) == 50
    assert len({e.path for e in reports}) == len({e.referrer for e in reports}) == 50
    assert sum(e.type == "pageview" for e in events) == 900


def test_traffic_is_in_event_time_order_at_the_rate() -> None:
    events = list(traffic(DemoTraffic(site_id="s", seed=1), 1_000_000_000_000, 4, 9))
    assert [e.ts - events[0].ts for e in events] == [0, 250, 500, 750, 1000, 1250, 1500, 1750, 2000]


def test_batches_draw_lazily() -> None:
    drawn = []

    def numbers():
        for n in itertools.count():
            drawn.append(n)
            yield n

    first = next(batches(numbers(), 3))
    assert first == [0, 1, 2]
    assert drawn == [0, 1, 2]
    assert list(batches(range(7), 3)) == [[0, 1, 2], [3, 4, 5], [6]]


def test_stack_redis_options_keep_the_knobs_but_place_and_persistence(tmp_path: Path) -> None:
    conf = tmp_path / "supervisord.conf"
    conf.write_text(
        "[program:redis]\n"
        'command=redis-server --port %(ENV_P)s --bind 127.0.0.1 --dir "%(ENV_D)s/redis"\n'
        '    --appendonly yes --appendfsync everysec --save "" --hash-max-listpack-entries 256 --daemonize no\n'
    )
    assert stack_redis_options(conf) == ["--hash-max-listpack-entries", "256"]
