"""The realtime store of this process, from Footfall's configuration."""

from __future__ import annotations

from functools import cache

import redis

from footfall.config import Config, footfall_config
from realtime.keys import KeyLayout
from realtime.store import CounterStore

GROUP = "footfall-realtime"


def store_for(cfg: Config) -> CounterStore:
    """A counter store on every Redis shard ``cfg`` names, with its retention and dedup window."""
    clients = [
        redis.Redis.from_url(url, socket_timeout=10, health_check_interval=30) for url in cfg.realtime_redis_urls
    ]
    return CounterStore(clients, KeyLayout(retention_s=cfg.realtime_retention_s, dedup_s=cfg.realtime_dedup_s))


@cache
def get_store() -> CounterStore:
    return store_for(footfall_config())
