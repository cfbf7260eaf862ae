"""Realtime counters sharded over three Redis: workers killed with SIGKILL every 2 s, and one
shard restarted from an append-only file that lost its last second. Counts stay exact.

Two ``manage.py run_realtime`` workers, ``FOOTFALL_REALTIME_REDIS_URLS`` naming the stack's three
Redis shards (``stack start redis-shards``), share a fresh 6-partition topic and group while
100,000 page views of the last hour and 5 % repeats of their ids (the same payloads again) are
produced at a steady rate; every 2 s the older worker is SIGKILLed and a new one started (for
at most 90 s, then the workers catch up). Mid-run, once a third is counted, one shard is
SIGKILLed as well and started again from its append-only file cut back to its size of a second
before. With ``appendfsync everysec`` a crash of the machine may lose the last second (a
SIGKILL alone loses less, if anything: what Redis answered but had not yet written, which it
holds back while the previous fsync runs); the cut makes the loss certain, of the counts,
dedup marks and recorded offsets of that second alike. The workers must resume from that
shard's older record and count that second again, once. At the end every shard's record
reaches the topic's end, and the query layer answers on the shards exactly what it answers on
one Redis holding the same distinct events applied directly: page views and events per minute
and hour, page views per value of every dimension, totals. Visitors (on shards a sum of
per-shard HyperLogLog estimates over disjoint visitors) are within HyperLogLog error of the
true count.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from deploy.local.services import StackConfig
from footfall.config import Config
from footfall_capture.events import Event
from realtime.reads import RealtimeQueries
from realtime.store import CounterStore
from tests.integration.realtime.conftest import Workers, answers, consumed, shard_urls, sharded_store, wait_consumed
from tests.integration.realtime.test_exactly_once import assert_exact, end_offsets, traffic
from tests.reliability.conftest import Results, Row, size
from tests.reliability.faults import fresh_topic, produce_steadily, stack, wait_for
from tests.reliability.test_worker_crashes import counted_offsets, shard_records

EVENTS = 100_000  # distinct page views, at both scales (issue 29's figure); 5 % more are repeats
PRODUCE_S = size(60, 120)  # the stream is produced at a steady rate over this long
KILL_EVERY_S = 2.0
WORKERS = 2  # always two: the older one is killed and a new one started
KILL_WINDOW_S = size(90, 180)  # kills stop once everything is counted, or after this long
LOST_SHARD = 2  # supervisord's redis-shard-2: the shard restarted from its AOF
TRUTH_DB = 5  # the one-Redis truth: a database of its own on the stack's Redis, flushed first


def aof_tail(data: Path) -> tuple[Path, int]:
    """A shard's newest incremental append-only file (Redis 7's manifest names it) and its size."""
    folder = data / "appendonlydir"
    entries = [line.split() for line in (folder / "appendonly.aof.manifest").read_text().splitlines()]
    path = folder / [entry[1] for entry in entries if entry[-2:] == ["type", "i"]][-1]
    return path, path.stat().st_size


def restart_losing_last_second(
    store: CounterStore, group: str, topic: str, total: int, stop: threading.Event
) -> dict[str, float] | None:
    """Once a third of the stream is counted, SIGKILL shard ``LOST_SHARD`` and start it from its
    append-only file as it was a second before (what a machine crash may leave with
    ``appendfsync everysec``). Tried each second until the shard records progress during it (the
    group counts nothing from a worker's kill to its next assignment), while most of the stream
    is still to count: a partition counted to its end would be looked at again only with its
    next message or the group's next rebalance. None, and nothing done, once ``stop`` is set."""
    shard, program = LOST_SHARD - 1, f"redis-shard-{LOST_SHARD}"
    data = StackConfig.from_env(os.environ).state_dir / program
    while counted_offsets(store, group, topic) < total // 3:
        if stop.wait(0.5):
            return None
    while not stop.is_set():
        left = total - counted_offsets(store, group, topic)
        assert left > total // 4, f"{program} recorded no progress in any second before {left:,} messages were left"
        path, cut = aof_tail(data)
        # The file at `cut` holds at most what the shard held then (Redis writes a step to it
        # after running it), no more than `before`: a record past `before` at the kill is cut.
        before = shard_records(store, group, topic)[shard]
        time.sleep(1.0)
        at_kill = shard_records(store, group, topic)[shard]
        if at_kill > before and aof_tail(data)[0] == path:  # (a rewrite of the AOF starts a new file)
            break
    else:
        return None
    counted = counted_offsets(store, group, topic)
    stack("kill", program)
    current, written = aof_tail(data)
    assert current == path, f"{program} started rewriting its AOF at the kill: cutting {path.name} loses more"
    os.truncate(path, cut)
    # The shard's record as it came back, read the moment it answers: the workers, retrying their
    # steps, write to it again soon after (on a busy machine, before `stack start` returns).
    # A client of its own that does not retry (redis-py's default backs off for seconds).
    client = redis.Redis.from_url(shard_urls().split(",")[shard], retry=Retry(NoBackoff(), 0))
    lost = CounterStore([client], store.layout)
    came_back: list[int] = []

    def answered() -> bool:
        try:
            came_back.append(shard_records(lost, group, topic)[0])
        except redis.RedisError:  # refused while down, LOADING while it reads its AOF
            return False
        return True

    # A daemon: a start that fails must not leave the run waiting on the poll.
    reader = threading.Thread(target=wait_for, args=(answered, 300, f"{program} answering"), kwargs={"every": 0.002},
                              daemon=True)  # fmt: skip
    reader.start()
    stack("start", "redis-shards")
    reader.join()
    client.close()
    assert came_back, f"{program} did not answer after its restart"
    return {"counted": counted / total, "cut_bytes": written - cut, "at_kill": at_kill, "after": came_back[0]}


def one_redis(cfg: Config, store: CounterStore, events: list[Event], now_ms: int) -> CounterStore:
    """The same events counted by one Redis (a flushed database of the stack's), applied directly."""
    client = redis.Redis.from_url(f"{cfg.redis_url.rsplit('/', 1)[0]}/{TRUTH_DB}")
    client.flushdb()
    truth = CounterStore([client], store.layout)
    for start in range(0, len(events), 5000):
        truth.apply(events[start : start + 5000], now_ms)
    return truth


def test_sharded_workers_kill_9_and_a_shard_restarted_from_its_aof(cfg: Config, results: Results) -> None:
    started = time.monotonic()
    stack("start", "redis-shards")
    site = f"sh-{uuid.uuid4().hex[:8]}"
    distinct, stream = traffic(site, EVENTS)
    store = sharded_store(cfg)
    assert len(store.shards) == 3
    stats_before = store.stats()
    stop = threading.Event()
    with fresh_topic(cfg) as topic, ThreadPoolExecutor(1) as faults:
        workers = Workers(topic, f"g-{topic}", {"FOOTFALL_REALTIME_REDIS_URLS": shard_urls()})
        group = workers.group
        try:
            for _ in range(WORKERS):
                workers.start()
            feeding = produce_steadily(cfg, topic, stream, PRODUCE_S)
            restart = faults.submit(restart_losing_last_second, store, group, topic, len(stream), stop)
            wait_for(lambda: counted_offsets(store, group, topic) > 0, 120, "the workers counting")
            at_first_kill = counted_offsets(store, group, topic)
            kills_from = time.monotonic()
            while time.monotonic() - kills_from < KILL_WINDOW_S:
                time.sleep(max(0.0, kills_from + (workers.kills + 1) * KILL_EVERY_S - time.monotonic()))
                if not feeding.is_alive() and restart.done() and consumed(store, group, topic, end_offsets(cfg, topic)):
                    break
                workers.kill9(workers.procs[0])  # the older: it holds partitions by now
                workers.start()
            kills_s = time.monotonic() - kills_from
            fault = restart.result()
            assert fault is not None
            feeding.join(120)
            ends = end_offsets(cfg, topic)
            assert sum(ends.values()) == len(stream)
            recovered = time.monotonic()
            wait_consumed(store, group, topic, ends, timeout=240)
            drained_s = time.monotonic() - recovered
        finally:
            stop.set()
            workers.stop()
    stats = {name: store.stats().get(name, 0) - stats_before.get(name, 0) for name in ("events", "duplicates")}

    now = int(time.time() * 1000)
    start = min(e.ts for e in distinct) // 60_000 * 60_000
    end = (max(e.ts for e in distinct) // 60_000 + 1) * 60_000
    truth = one_redis(cfg, store, distinct, now)
    got, expected = answers(store, site, start, end), answers(truth, site, start, end)
    per_minute = [
        (g, e) for (_, g), (_, e) in zip(got["pageviews per minute"], expected["pageviews per minute"], strict=True)
    ]
    true_visitors = len({e.visitor_id for e in distinct})
    sharded_uv = RealtimeQueries(store).totals(site, start, end)["visitors"]
    one_uv = RealtimeQueries(truth).totals(site, start, end)["visitors"]
    shares = [len(part) for part in store.split(distinct)]
    results.record(
        Row(
            scenario="realtime shards: worker kill -9, shard restart from AOF",
            load=f"{len(stream):,} events ({len(distinct):,} distinct, 5 % duplicate ids) over {PRODUCE_S} s, "
            f"{WORKERS} workers, 3 Redis shards ({' / '.join(f'{n:,}' for n in shares)} distinct events each)",
            faults=f"kill -9 a worker every {kills_s / max(1, workers.kills):.1f} s for {kills_s:.0f} s "
            f"({workers.kills} kills); redis-shard-{LOST_SHARD} SIGKILLed with {fault['counted']:.0%} counted and "
            f"restarted from its AOF as it was a second before ({fault['cut_bytes']:,.0f} bytes cut; its record of "
            f"offsets fell from {fault['at_kill']:,.0f} to {fault['after']:,.0f} messages)",
            sent=len(stream),
            lost=sum(max(0, e - g) for g, e in per_minute),
            duplicated=sum(max(0, g - e) for g, e in per_minute),
            notes=f"every answer equal to one Redis's (page views and events per minute and hour, page views "
            f"per value of every dimension, totals): {got == expected}; visitors {sharded_uv:,} on the shards, "
            f"{one_uv:,} on one Redis, {true_visitors:,} true; stats: {stats['events']:,} counted, "
            f"{stats['duplicates']:,} duplicates; {at_first_kill / len(stream):.0%} counted at the first kill; "
            f"caught up {drained_s:.1f} s after the last kill",
        ),
        started,
    )
    assert fault["after"] < fault["at_kill"], "the shard came back with nothing to count again"
    assert got == expected
    assert got["totals"]["pageviews"] == len(distinct)  # the repeated ids were not counted
    assert stats == {"events": len(distinct), "duplicates": len(stream) - len(distinct)}  # each known as such, once
    assert abs(sharded_uv - true_visitors) <= 0.03 * true_visitors, (sharded_uv, true_visitors)
    assert_exact(store, site, distinct)
