"""Reachability checks of the stores Footfall depends on; each returns an error or None.

Used by the ``/api/v1/health`` endpoint (load balancers, the demo script) and by operators.
Every check is bounded by a short timeout so a dead dependency cannot hang the endpoint.
"""

from __future__ import annotations

from collections.abc import Callable

import pymongo
import redis
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from pymongo.errors import PyMongoError

from footfall.config import Config

TIMEOUT_S = 2.0


def check_kafka(cfg: Config) -> str | None:
    try:
        topics = AdminClient({"bootstrap.servers": cfg.kafka_bootstrap_servers}).list_topics(timeout=TIMEOUT_S).topics
    except KafkaException as exc:
        return f"unreachable: {exc.args[0]}"
    missing = {cfg.events_topic, cfg.invalid_topic} - set(topics)
    return f"missing topics: {', '.join(sorted(missing))}" if missing else None


def check_redis(cfg: Config) -> str | None:
    try:
        redis.Redis.from_url(cfg.redis_url, socket_timeout=TIMEOUT_S, socket_connect_timeout=TIMEOUT_S).ping()
    except redis.RedisError as exc:
        return f"unreachable: {exc}"
    return None


def check_mongo(cfg: Config) -> str | None:
    client: pymongo.MongoClient = pymongo.MongoClient(cfg.mongo_url, serverSelectionTimeoutMS=int(TIMEOUT_S * 1000))
    try:
        client.admin.command("ping")
    except PyMongoError as exc:
        return f"unreachable: {exc}"
    finally:
        client.close()
    return None


CHECKS: dict[str, Callable[[Config], str | None]] = {
    "kafka": check_kafka,
    "redis": check_redis,
    "mongo": check_mongo,
}


def check_all(cfg: Config) -> dict[str, str | None]:
    """Map each store to None (healthy) or a one-line reason it is not."""
    return {name: check(cfg) for name, check in CHECKS.items()}
