"""Redis over a real connection: counters, HyperLogLogs and pipelines behave as the realtime layer needs."""

from __future__ import annotations

import uuid

import redis


def test_pipeline_counters_and_hll(redis_client: redis.Redis) -> None:
    """Increments sent in one MULTI pipeline all apply; HLL counts distinct visitors."""
    prefix = f"test:{uuid.uuid4().hex}"
    pipe = redis_client.pipeline(transaction=True)
    for i in range(100):
        pipe.hincrby(f"{prefix}:pv", f"/page/{i % 4}", 1)
        pipe.pfadd(f"{prefix}:uv", f"visitor-{i % 37}")
    pipe.expire(f"{prefix}:pv", 3600)
    pipe.execute()
    assert redis_client.hgetall(f"{prefix}:pv") == {f"/page/{n}": "25" for n in range(4)}
    assert redis_client.pfcount(f"{prefix}:uv") == 37
    assert 0 < redis_client.ttl(f"{prefix}:pv") <= 3600
    redis_client.delete(f"{prefix}:pv", f"{prefix}:uv")


def test_hll_merges_across_buckets(redis_client: redis.Redis) -> None:
    """Minute HLLs merge into an hour without double counting a returning visitor."""
    prefix = f"test:{uuid.uuid4().hex}"
    redis_client.pfadd(f"{prefix}:m1", *[f"v{i}" for i in range(0, 60)])
    redis_client.pfadd(f"{prefix}:m2", *[f"v{i}" for i in range(30, 90)])
    assert redis_client.pfcount(f"{prefix}:m1", f"{prefix}:m2") == 90
    redis_client.delete(f"{prefix}:m1", f"{prefix}:m2")


def test_lua_script_applies_atomically(redis_client: redis.Redis) -> None:
    """A script that records a dedup key and increments runs as one step (the exactly-once building block)."""
    key = f"test:{uuid.uuid4().hex}"
    script = redis_client.register_script(
        "if redis.call('SET', KEYS[1], 1, 'NX', 'EX', 60) then return redis.call('INCR', KEYS[2]) end return -1"
    )
    assert script(keys=[f"{key}:seen:e1", f"{key}:n"]) == 1
    assert script(keys=[f"{key}:seen:e1", f"{key}:n"]) == -1  # the duplicate changes nothing
    assert redis_client.get(f"{key}:n") == "1"
    redis_client.delete(f"{key}:seen:e1", f"{key}:n")


def test_append_only_persistence_is_on(redis_client: redis.Redis) -> None:
    """The stack's Redis keeps an fsync'd AOF, so counters survive a restart."""
    assert redis_client.config_get("appendonly") == {"appendonly": "yes"}
