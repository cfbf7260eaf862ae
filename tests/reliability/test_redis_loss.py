"""Redis lost: killed and restarted empty; the rebuild command restores the realtime window.

A realtime worker counts the first half of a stream of page views (5 % duplicate ids);
then the stack's Redis is SIGKILLed (``stack kill redis``), its data files are deleted and
it is started again empty (``stack start redis``). The worker carries on with the second
half; ``manage.py rebuild_realtime`` replays the Kafka log; afterwards the counters equal the
distinct truth of the whole stream exactly. The batch layer does not depend on Redis: the
archive (written by the real archiver) holds every event id, and the Mongo rollups are
unchanged. Redis is shared by the whole run, so it is running again before the test ends.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pymongo
import redis

from archive.store import Archive, read_event_ids
from deploy.local.services import StackConfig
from footfall.config import Config
from historical.store import BREAKDOWNS, DAILY, HOURLY, RUNS
from realtime.keys import KeyLayout
from realtime.reads import RealtimeQueries
from realtime.store import CounterStore
from tests.integration.batch.test_rollup_e2e import archive_topic
from tests.integration.kafka_tail import produce
from tests.integration.realtime.conftest import Workers, wait_consumed
from tests.integration.realtime.test_exactly_once import assert_exact, end_offsets, traffic
from tests.reliability.conftest import REPO, Results, Row, size
from tests.reliability.faults import fresh_topic, private, stack, wait_for

EVENTS = size(10_000, 100_000)


def rollup_snapshot(cfg: Config) -> dict[str, list[dict]]:
    client: pymongo.MongoClient = pymongo.MongoClient(cfg.mongo_url, serverSelectionTimeoutMS=10_000)
    try:
        db = client[cfg.mongo_db]
        return {name: list(db[name].find().sort("_id")) for name in (DAILY, HOURLY, BREAKDOWNS, RUNS)}
    finally:
        client.close()


def lose_redis(client: redis.Redis) -> None:
    """SIGKILL the stack's Redis, delete its data files, start it again (empty)."""
    data = StackConfig.from_env(os.environ).state_dir / "redis"
    stack("kill", "redis")
    for path in data.iterdir():
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    stack("start", "redis")
    wait_for(lambda: _pings(client), 30, "Redis answering again")


def _pings(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False


def test_redis_lost_and_rebuilt_from_the_log(cfg: Config, tmp_path: Path, results: Results) -> None:
    started = time.monotonic()
    site = f"rl-{uuid.uuid4().hex[:8]}"
    distinct, stream = traffic(site, EVENTS)
    half = len(stream) // 2
    store = CounterStore(redis.Redis.from_url(cfg.redis_url), KeyLayout())
    queries = RealtimeQueries(store)
    window = (min(e.ts for e in distinct) // 60_000 * 60_000, (max(e.ts for e in distinct) // 60_000 + 1) * 60_000)
    rollups_before = rollup_snapshot(cfg)
    with fresh_topic(cfg) as topic:
        workers = Workers(topic, f"g-{topic}")
        try:
            workers.start()
            produce(cfg, topic, stream[:half])
            wait_consumed(store, workers.group, topic, end_offsets(cfg, topic))
            before_loss = queries.totals(site, *window)["pageviews"]
            lose_redis(store.client)
            after_loss = queries.totals(site, *window)["pageviews"]
            produce(cfg, topic, stream[half:])
            wait_consumed(store, workers.group, topic, end_offsets(cfg, topic))
            live_only = queries.totals(site, *window)["pageviews"]
            rebuild_from = time.monotonic()
            done = subprocess.run(
                [sys.executable, "manage.py", "rebuild_realtime", "--site", site, "--topic", topic, "--no-progress"],
                cwd=REPO, env=os.environ, capture_output=True, text=True, timeout=600,
            )  # fmt: skip
            rebuild_s = time.monotonic() - rebuild_from
            assert done.returncode == 0, done.stderr[-2000:]
        finally:
            workers.stop()
            stack("start", "redis")  # whatever failed above, Redis is running for the rest of the run
        pcfg = private(cfg, tmp_path, topic)
        archive_topic(pcfg, topic, len(stream))
        archived = set(read_event_ids(Archive(pcfg.archive_url)))
    rollups_unchanged = rollup_snapshot(cfg) == rollups_before

    counted = queries.totals(site, *window)["pageviews"]
    results.record(
        Row(
            scenario="Redis lost and rebuilt",
            load=f"{len(stream):,} events ({len(distinct):,} distinct, 5 % duplicate ids), 1 worker",
            faults="Redis SIGKILLed after the first half, data files deleted, restarted empty",
            sent=len(stream),
            lost=max(0, len(distinct) - counted),
            duplicated=max(0, counted - len(distinct)),
            notes=f"page views before the loss {before_loss:,}, right after {after_loss:,}, with the second half "
            f"{live_only:,}, after rebuild_realtime ({rebuild_s:.1f} s) {counted:,}; counters exact per "
            f"minute/page/referrer; archive holds {len(archived & {e.event_id for e in distinct}):,} of "
            f"{len(distinct):,} ids; Mongo rollups {'unchanged' if rollups_unchanged else 'CHANGED'} "
            f"({sum(len(docs) for docs in rollups_before.values())} documents)",
        ),
        started,
    )
    assert before_loss == len({e.event_id for e in stream[:half]})
    assert after_loss == 0, "Redis did not come back empty"
    assert_exact(store, site, distinct)
    assert archived == {e.event_id for e in distinct}
    assert rollups_unchanged
