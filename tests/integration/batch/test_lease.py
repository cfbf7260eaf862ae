"""The batch jobs' lease over real Redis: exclusive, renewed while held, freed soon after a kill -9."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import redis

from archive.lease import Lease
from archive.lock import KEY, ArchiveLock
from footfall.config import Config
from historical.tasks import compact_archive

REPO = Path(__file__).resolve().parents[3]
HOLDER = """
import sys, time, redis
from archive.lease import Lease
lease = Lease(redis.Redis.from_url(sys.argv[1]), sys.argv[2], ttl_s=3)
assert lease.acquire()
print("held", flush=True)
time.sleep(120)
"""


def test_lease_is_exclusive_and_renewed_past_its_ttl(redis_client: redis.Redis) -> None:
    key = f"test:lease:{uuid.uuid4().hex}"
    first, second = Lease(redis_client, key, ttl_s=6), Lease(redis_client, key, ttl_s=6)
    with first as held:
        assert held
        assert not second.acquire()
        time.sleep(8)  # longer than the TTL: the holder's thread renewed it (every 2 s)
        assert not second.acquire()
        assert 0 < redis_client.pttl(key) <= 6000
    assert redis_client.get(key) is None  # released on leaving the block
    with second as held:
        assert held


def test_a_killed_holder_frees_the_lease_within_its_ttl(redis_client: redis.Redis, cfg: Config) -> None:
    key = f"test:lease:{uuid.uuid4().hex}"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, cfg.redis_url, key], cwd=REPO, env=os.environ, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        assert not Lease(redis_client, key, ttl_s=3).acquire()
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
        killed = time.monotonic()
        waiter = Lease(redis_client, key, ttl_s=3)
        while not waiter.acquire():
            assert time.monotonic() - killed < 30, "the dead holder's lease did not expire"
            time.sleep(0.1)
        waiter.release()
    finally:
        holder.kill()
        holder.wait()


def test_compaction_waits_while_a_rollup_holds_the_lease(redis_client: redis.Redis) -> None:
    """Compaction deletes files a running Spark job may have listed: it skips its run instead."""
    rollup = ArchiveLock(redis_client, "a rollup")
    rollup.acquire()
    try:
        assert compact_archive() == {"skipped": 1}
    finally:
        rollup.release()
    assert redis_client.get(KEY) is None
