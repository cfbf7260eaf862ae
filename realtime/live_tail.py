"""The live event tail's reader: the events of the log as they arrive, for people watching.

Ephemeral, like NSQ's ephemeral channels: it reads every partition of the topic from its end
as it is when the reader opens, assigned by hand, never through a consumer group. librdkafka
wants a group id even so; the reader's is its own (``footfall-tail-<random>``), and as it
neither joins nor commits, the brokers keep no group and no offsets for it. Closing it leaves
nothing behind. It counts nothing: the realtime workers and the archiver are the log's
consumers of record.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaException, Message, TopicPartition

from footfall.config import Config
from footfall.kafka_client import consumer_config

GROUP_PREFIX = "footfall-tail-"
POLL_S = 0.2
# A fetch returns as soon as there is a message, or after this long: a beacon shows within it.
FETCH_WAIT_MS = 100


@dataclass(frozen=True)
class Arrival:
    """One message of the log: its bytes, headers and the broker's timestamp (ms)."""

    value: bytes
    headers: dict[str, str]
    timestamp_ms: int


class LogTail:
    """Reads ``topic`` from its current end; ``arrivals()`` yields what is appended from then on."""

    def __init__(self, cfg: Config, topic: str) -> None:
        self.topic = topic
        self.group_id = f"{GROUP_PREFIX}{uuid.uuid4().hex}"
        self._consumer = Consumer(consumer_config(cfg, self.group_id, **{"fetch.wait.max.ms": FETCH_WAIT_MS}))
        try:
            found = self._consumer.list_topics(topic, timeout=10).topics[topic]
            if found.error is not None:
                raise KafkaException(found.error)
            # From the end as it is now, each partition's offset fixed here: an event appended
            # after the constructor returns is shown (OFFSET_END would be resolved later).
            ends = [
                TopicPartition(topic, p, self._consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1])
                for p in sorted(found.partitions)
            ]
            self._consumer.assign(ends)
        except BaseException:
            self._consumer.close()
            raise

    def arrivals(self, timeout_s: float = POLL_S) -> Iterator[Arrival]:
        """What arrived, as soon as something did, waiting ``timeout_s`` at most (possibly nothing)."""
        # poll() returns at the first message; consume() would wait out its timeout for a full batch.
        first = self._consumer.poll(timeout_s)
        if first is None:
            return
        for message in [first, *self._consumer.consume(499, timeout=0)]:
            if message.error() is None:
                yield _arrival(message)

    def close(self) -> None:
        self._consumer.close()  # no commit: it never stored an offset


def _arrival(message: Message) -> Arrival:
    headers = {key: (value or b"").decode("utf-8", "replace") for key, value in message.headers() or []}
    return Arrival(message.value() or b"", headers, message.timestamp()[1])
