"""Kafka consumer settings shared by the server's consumers (confluent-kafka / librdkafka).

Consumers never auto-commit, because offsets may only move once the effect of a message is
durable. Producers' settings live with the capture library (:mod:`footfall_capture.kafka`).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable

from arroyo.backends.kafka import KafkaConsumer, build_kafka_consumer_configuration
from confluent_kafka import KafkaError

from footfall.config import Config
from footfall_capture.kafka import KAFKA_LOG, client_config
from footfall_capture.kafka_security import KafkaAuthenticationFailed, KafkaSecurity

# Also the rebalance timeout librdkafka sends with JoinGroup: how long a rejoin may wait for
# members that do not come back. Our loops poll every few seconds, so 120 s only catches a
# consumer that is truly stuck (the default, 300 s, kept a stalled rejoin waiting minutes).
MAX_POLL_INTERVAL_MS = 120_000
# How long a consumer may stay out of its group before it is rebuilt (see GroupWatch).
REJOIN_LIMIT_S = MAX_POLL_INTERVAL_MS / 1000 + 30
# How long closing a group consumer may take before the client is abandoned (see close_within).
CLOSE_LIMIT_S = 30.0


def consumer_config(cfg: Config, group_id: str, **overrides: object) -> dict[str, object]:
    """librdkafka consumer settings: manual commits, start from the earliest unread offset;
    ``poll()`` raises :class:`KafkaAuthenticationFailed` when the brokers refuse the
    client's credentials or certificates (see :func:`fail_on_refusal`)."""
    return {
        **client_config(cfg.kafka),
        "error_cb": fail_on_refusal(cfg.kafka_security),
        "group.id": group_id,
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        "partition.assignment.strategy": "cooperative-sticky",
        "max.poll.interval.ms": MAX_POLL_INTERVAL_MS,
        **overrides,
    }


def fail_on_refusal(security: KafkaSecurity) -> Callable[[KafkaError], None]:
    """An ``error_cb`` that raises :class:`KafkaAuthenticationFailed`, naming the settings, when
    the brokers refuse the credentials or the certificate (librdkafka would retry for ever, and
    a worker that never consumes looks alive); other errors stay librdkafka's to retry. A
    consumer's error callbacks run inside ``poll()``, which re-raises what they raise."""

    def on_error(err: KafkaError) -> None:
        message = security.describe(err)
        if message is None:
            return
        if security.is_definitive(err):
            raise KafkaAuthenticationFailed(message)
        KAFKA_LOG.error("%s", message)

    return on_error


def group_consumer(cfg: Config, group: str, session_timeout_ms: int, watch: GroupWatch) -> KafkaConsumer:
    """An arroyo consumer in ``group``: manual commits, the earliest offset for a new group,
    and librdkafka's statistics (every second, as arroyo asks) reported to ``watch`` too.

    arroyo manages assignments itself with the classic eager protocol, so round-robin, not
    librdkafka's cooperative-sticky (which needs incremental assignment).
    ``session_timeout_ms`` bounds how long the partitions of a member that died without
    leaving (kill -9, a lost host) wait before another member takes them."""
    base = consumer_config(
        cfg, group, **{"partition.assignment.strategy": "roundrobin", "session.timeout.ms": session_timeout_ms}
    )
    arroyo_managed = {"group.id", "enable.auto.commit", "enable.auto.offset.store"}
    config = build_kafka_consumer_configuration(
        {k: v for k, v in base.items() if k not in arroyo_managed}, group_id=group, auto_offset_reset="earliest"
    )
    arroyo_stats = config.get("stats_cb")

    def on_stats(stats_json: str) -> None:
        if callable(arroyo_stats):
            arroyo_stats(stats_json)
        watch.observe(stats_json)

    config["stats_cb"] = on_stats
    return BoundedCloseConsumer(config)


class BoundedCloseConsumer(KafkaConsumer):
    """arroyo's Kafka consumer whose ``close()`` returns within :data:`CLOSE_LIMIT_S`.

    librdkafka's close leaves the group first, and a client that cannot reach its group
    coordinator waits for it without end: after a broker restart, the archiver's consumer
    that :class:`GroupWatch` had found stuck (a GroupCoordinator request sat in its
    out-queue) then hung in close for minutes, so the consumer meant to replace it was never
    built. Offsets are only ever committed explicitly, so a client given up on loses nothing:
    its partitions were revoked, or are once its session times out, and the new consumer
    reads on from the last commit."""

    close_limit_s = CLOSE_LIMIT_S

    def close(self, timeout: float | None = None) -> None:
        close_within(lambda: KafkaConsumer.close(self, timeout), self.close_limit_s, "the Kafka consumer")


def close_within(close: Callable[[], None], limit_s: float, what: str) -> bool:
    """Run ``close`` on a daemon thread and wait at most ``limit_s`` for it: ``True`` if it
    returned (its exception, if any, is raised here), ``False`` if it is still running and was
    left to itself (logged as an error; its thread ends whenever the call does)."""
    failure: list[BaseException] = []

    def run() -> None:
        try:
            close()
        except BaseException as exc:  # re-raised in the caller's thread
            failure.append(exc)

    thread = threading.Thread(target=run, name="footfall-close", daemon=True)
    thread.start()
    thread.join(limit_s)
    if thread.is_alive():
        KAFKA_LOG.error("closing %s took over %.0fs (no answer from its group coordinator): left behind", what, limit_s)
        return False
    if failure:
        raise failure[0]
    return True


class GroupWatch:
    """Notices a consumer whose group membership does not come back, so it can be rebuilt.

    librdkafka has known cases of a consumer that stays out of its group after the group
    coordinator (a broker) restarts (confluentinc/librdkafka#2944, #3396; here, after a
    broker restart, a GroupCoordinator request sat in its out-queue and the archiver never
    rejoined). Nothing errors: ``poll()`` keeps answering, the partitions sit unconsumed,
    and only a new client recovers. This watch reads the group state from librdkafka's
    statistics, which ``poll()`` hands to :meth:`observe` (every second), and calls
    ``on_stuck`` once when the group has been out of its steady joined state for
    ``limit_s`` seconds in a row. A legitimate rejoin waits at most the rebalance timeout
    (``max.poll.interval.ms``), hence the default. While the whole cluster is down the
    consumer is rebuilt every ``limit_s`` too: useless but harmless, and simpler than
    guessing from connection states which of the two is happening. ``on_stuck`` must only
    signal (it runs inside ``poll()``); the caller then closes the consumer (a close that
    hangs is given up after :data:`CLOSE_LIMIT_S`, see :class:`BoundedCloseConsumer`) and
    builds a new one, with a new watch. Consumers without a group (no ``cgrp`` in the
    statistics) are never flagged.
    """

    def __init__(
        self,
        limit_s: float = REJOIN_LIMIT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if limit_s <= 0:
            raise ValueError("limit_s must be positive")
        self.limit_s = limit_s
        self.clock = clock
        self.on_stuck: Callable[[], None] | None = None  # set once the consumer's processor exists
        self.stuck = False
        self.state = "unknown"  # the group's last reported "state/join_state"
        self._unsettled_s = 0.0  # time out of the steady state, in a row
        self._last: float | None = None

    def observe(self, stats_json: str) -> None:
        """One librdkafka statistics report (JSON text)."""
        now = self.clock()
        elapsed = 0.0 if self._last is None else now - self._last
        self._last = now
        stats = json.loads(stats_json)
        group = stats.get("cgrp")
        if not group:
            return
        self.state = f"{group.get('state')}/{group.get('join_state')}"
        if group.get("state") == "up" and group.get("join_state") == "steady":
            self._unsettled_s = 0.0
            return
        self._unsettled_s += elapsed
        if self._unsettled_s >= self.limit_s and not self.stuck:
            self.stuck = True
            KAFKA_LOG.error(
                "consumer out of its group for %.0fs (state %s; the broker is down or the client stuck): "
                "rebuilding the consumer",
                self._unsettled_s,
                self.state,
            )
            if self.on_stuck is not None:
                self.on_stuck()
