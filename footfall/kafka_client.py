"""Kafka client settings shared by every producer and consumer (confluent-kafka / librdkafka).

One place decides delivery guarantees: producers are idempotent with ``acks=all`` so a
retried send never duplicates or reorders within a partition; consumers never auto-commit,
because offsets may only move once the effect of a message is durable.
"""

from __future__ import annotations

import logging

from footfall.config import Config

# librdkafka writes its own log lines to stderr unless given a logger; route them through
# logging so operators filter and ship them like everything else.
KAFKA_LOG = logging.getLogger("footfall.kafka")


def producer_config(cfg: Config, **overrides: object) -> dict[str, object]:
    """librdkafka producer settings for ``cfg``; ``overrides`` win (e.g. timeouts in tests)."""
    return {
        "bootstrap.servers": cfg.kafka_bootstrap_servers,
        "enable.idempotence": True,
        "acks": "all",
        "compression.type": "lz4",
        # Batch for up to 5 ms: throughput at the cost of a latency nobody sees.
        "linger.ms": 5,
        # Give up on a message after 30 s so callers learn of an outage and can spool.
        "message.timeout.ms": 30_000,
        "logger": KAFKA_LOG,
        **overrides,
    }


def consumer_config(cfg: Config, group_id: str, **overrides: object) -> dict[str, object]:
    """librdkafka consumer settings: manual commits, start from the earliest unread offset."""
    return {
        "bootstrap.servers": cfg.kafka_bootstrap_servers,
        "group.id": group_id,
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        "partition.assignment.strategy": "cooperative-sticky",
        # Also the rebalance timeout librdkafka sends with JoinGroup: how long a rejoin may wait
        # for members that do not come back. A rejoin after a broker restart was seen stalled for
        # over three minutes (default 300 s; cause not proven). Our loops poll every few seconds,
        # so 120 s still only catches a stuck consumer.
        "max.poll.interval.ms": 120_000,
        "logger": KAFKA_LOG,
        **overrides,
    }
