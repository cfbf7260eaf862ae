"""The realtime store of this process, from Footfall's configuration."""

from __future__ import annotations

from functools import cache

import redis

from footfall.config import footfall_config
from realtime.keys import KeyLayout
from realtime.store import CounterStore

GROUP = "footfall-realtime"


@cache
def get_store() -> CounterStore:
    cfg = footfall_config()
    client = redis.Redis.from_url(cfg.redis_url, socket_timeout=10, health_check_interval=30)
    return CounterStore(client, KeyLayout(retention_s=cfg.realtime_retention_s))
