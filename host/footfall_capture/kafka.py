"""Where events go on Kafka and how they are produced: one home for the producer's settings.

Producers are idempotent with ``acks=all``, so a retried send never duplicates or reorders
within a partition and a write acknowledged by the brokers survives the loss of one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from footfall_capture.kafka_security import KafkaSecurity
from footfall_capture.quiet_log import librdkafka_kind, quiet_logger

# librdkafka writes its own log lines to stderr unless given a logger; route them through
# logging so operators filter and ship them like everything else, one line per kind a minute.
KAFKA_LOG = quiet_logger("footfall.kafka", librdkafka_kind)


@dataclass(frozen=True, slots=True)
class KafkaSettings:
    """The brokers and topics a producer writes to, and how clients authenticate to them."""

    bootstrap_servers: str
    events_topic: str = "events"
    invalid_topic: str = "events.invalid"
    security: KafkaSecurity = field(default_factory=KafkaSecurity)


def client_config(kafka: KafkaSettings, **overrides: object) -> dict[str, object]:
    """What every librdkafka client (producer, consumer, admin) needs to reach the brokers:
    their addresses, TLS/SASL, and the logger; ``overrides`` win. No client builds its own."""
    return {
        "bootstrap.servers": kafka.bootstrap_servers,
        **kafka.security.librdkafka(),
        "logger": KAFKA_LOG,
        **overrides,
    }


def producer_config(kafka: KafkaSettings, **overrides: object) -> dict[str, object]:
    """librdkafka producer settings for ``kafka``; ``overrides`` win (e.g. timeouts in tests)."""
    return {
        **client_config(kafka),
        "enable.idempotence": True,
        "acks": "all",
        "compression.type": "lz4",
        # Batch for up to 5 ms: throughput at the cost of a latency nobody sees.
        "linger.ms": 5,
        # Give up on a message after 30 s so callers learn of an outage and can spool.
        "message.timeout.ms": 30_000,
        **overrides,
    }
