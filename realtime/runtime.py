"""The realtime store of this process, from Footfall's configuration."""

from __future__ import annotations

from functools import cache

import redis

from footfall.config import Config, footfall_config
from realtime.keys import KeyLayout
from realtime.store import CounterStore

GROUP = "footfall-realtime"


WORKER_TIMEOUT_S = 10.0  # a worker's writes may be large batches under load; they retry, nobody waits on them


def store_for(cfg: Config, timeout_s: float = WORKER_TIMEOUT_S) -> CounterStore:
    """A counter store on every Redis shard ``cfg`` names, with its retention and dedup window;
    a shard that does not answer within ``timeout_s`` fails the call."""
    clients = [
        redis.Redis.from_url(url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s, health_check_interval=30)
        for url in cfg.realtime_redis_urls
    ]
    return CounterStore(clients, KeyLayout(retention_s=cfg.realtime_retention_s, dedup_s=cfg.realtime_dedup_s))


@cache
def get_store() -> CounterStore:
    """The store for this process's reads (the API, the dashboard): a shard that does not
    answer within ``REDIS_TIMEOUT_MS`` fails the read rather than holding a web thread."""
    cfg = footfall_config()
    return store_for(cfg, cfg.redis_timeout_ms / 1000)
