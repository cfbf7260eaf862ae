"""Pipeline health, read from the stores that hold it.

:func:`check_all` tells whether each store answers (test set-up, scripts);
:class:`HealthChecks` does the same for the ``/api/v1/health`` endpoint that load balancers
poll, with one reused client per store and each answer reused for :data:`CHECK_TTL_S`.
:class:`PipelineHealth` is what the dashboard's health panel shows, each part read on its
own (newest counted event and the counters' stats from Redis; consumer lag from Kafka;
rollup runs and realtime-vs-batch drift from Mongo), so a caller can show the parts that
answered when one store is down.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from archive.group import GROUP as ARCHIVER_GROUP
from footfall.breaker import Breaker, StoreUnavailable
from footfall.config import Config
from footfall_capture.kafka import client_config
from historical import store as mongo
from historical.reads import RollupReads
from realtime import store as counters
from realtime.health import consumer_lag, newest_event_ms, realtime_health
from realtime.runtime import GROUP as REALTIME_GROUP

log = logging.getLogger(__name__)

LAG_TTL_S = 10.0  # consumer lag costs Kafka round trips: at most one reading per process per 10 s


@dataclass(frozen=True, slots=True)
class SpeedLayer:
    last_event_ms: int | None  # event time of the newest counted event of the site
    stats: dict[str, int]  # the counters' totals: invalid, duplicates, late, ...


@dataclass
class PipelineHealth:
    cfg: Config
    store: counters.CounterStore
    rollups: RollupReads
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _lag: tuple[float, dict[str, Any]] | None = field(default=None, repr=False)

    def speed_layer(self, site_id: str) -> SpeedLayer:
        """The realtime layer's view of a site (raises if Redis is down)."""
        return SpeedLayer(newest_event_ms(self.store, site_id), self.store.stats())

    def lag(self) -> dict[str, Any]:
        """``{"realtime": realtime_health(...), "archiver_lag": n}``, cached for :data:`LAG_TTL_S`
        (raises if Kafka is down)."""
        with self._lock:
            if self._lag is not None and time.monotonic() - self._lag[0] < LAG_TTL_S:
                return dict(self._lag[1])
            value = {
                "realtime": realtime_health(self.cfg, self.store, REALTIME_GROUP),
                "archiver_lag": sum(consumer_lag(self.cfg, ARCHIVER_GROUP, self.cfg.events_topic).values()),
            }
            self._lag = (time.monotonic(), value)
            return dict(value)

    def realtime_lag_s(self, now_ms: int | None = None) -> float:
        """How far behind the log the speed layer is, in seconds: the age of the oldest event
        the realtime group has not processed yet (0 when it has processed everything). Unlike
        a count of messages, this grows while the workers are stopped however quiet the
        sites are, and means the same on a busy log and a quiet one (raises if Kafka is down)."""
        oldest = oldest_pending_ms(self.cfg, REALTIME_GROUP, self.cfg.events_topic)
        if oldest is None:
            return 0.0
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        return max(0.0, (now_ms - oldest) / 1000)

    def batch_days(self, site_id: str, days: int) -> tuple[list[dict], list[dict]]:
        """The newest ``days`` rollup runs and reconciliation records of a site (raises if Mongo is down)."""
        return self.rollups.runs(site_id, days), self.rollups.drift(site_id, days)


def oldest_pending_ms(cfg: Config, group: str, topic: str, timeout_s: float = 10.0) -> int | None:
    """The log time (ms) of the oldest message of ``topic`` that ``group`` has not committed,
    None when it has committed every partition to its end. Reads one message per partition
    behind, at the group's committed offset, without joining the group or committing."""
    consumer = Consumer(
        client_config(cfg.kafka, **{"group.id": group, "enable.auto.commit": False, "enable.partition.eof": False})
    )
    try:
        partitions = consumer.list_topics(topic, timeout=timeout_s).topics[topic].partitions
        committed = consumer.committed([TopicPartition(topic, p) for p in partitions], timeout=timeout_s)
        behind = []
        for tp in committed:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, tp.partition), timeout=timeout_s)
            start = tp.offset if tp.offset >= 0 else low
            if start < high:
                behind.append(TopicPartition(topic, tp.partition, max(start, low)))
        oldest: int | None = None
        for tp in behind:  # one partition at a time: each answers with its own first message
            consumer.assign([tp])
            msg = consumer.poll(timeout_s)
            if msg is None or msg.error() is not None:
                raise KafkaException(f"no message at {topic}[{tp.partition}]@{tp.offset} within {timeout_s:.0f}s")
            _, ts = msg.timestamp()
            oldest = ts if oldest is None else min(oldest, ts)
        return oldest
    finally:
        consumer.close()


CHECK_TIMEOUT_S = 2.0  # a dead dependency cannot hang the health endpoint


CHECK_TTL_S = 5.0  # a flood of health requests costs each store at most one check per 5 s


class HealthChecks:
    """Whether each store answers, for a busy public endpoint (and :func:`check_all`).

    Each store is checked at most once per :data:`CHECK_TTL_S` per process, whoever asks and
    however many ask at once (a lock per store: callers wait for the check under way), with
    one client per store kept for the process's life instead of three new ones per request.
    Clients are made on first use, so a process that forks before serving inherits none.
    """

    def __init__(self, cfg: Config, ttl_s: float = CHECK_TTL_S) -> None:
        self.cfg = cfg
        self.ttl_s = ttl_s
        self._locks = {name: threading.Lock() for name in ("kafka", "redis", "mongo")}
        self._answers: dict[str, tuple[float, str | None]] = {}
        self._kafka: AdminClient | None = None
        self._redis = counters.redis_ping(cfg.redis_url, CHECK_TIMEOUT_S)
        self._mongo = mongo.mongo_ping(cfg.mongo_url, CHECK_TIMEOUT_S)

    def status(self) -> dict[str, str | None]:
        """Map each store to None (healthy) or a one-line reason, at most :data:`CHECK_TTL_S` old."""
        return {name: self._answer(name) for name in self._locks}

    def _answer(self, name: str) -> str | None:
        with self._locks[name]:
            cached = self._answers.get(name)
            if cached is not None and time.monotonic() - cached[0] < self.ttl_s:
                return cached[1]
            problem = getattr(self, f"_check_{name}")()
            if problem is not None:
                log.warning("health: %s %s", name, problem)
            self._answers[name] = (time.monotonic(), problem)
            return problem

    def close(self) -> None:
        """Close the clients made so far (Kafka's admin client holds no connection to close)."""
        self._redis.close()
        self._mongo.close()

    def _check_kafka(self) -> str | None:
        if self._kafka is None:
            self._kafka = AdminClient(client_config(self.cfg.kafka))
        try:
            topics = self._kafka.list_topics(timeout=CHECK_TIMEOUT_S).topics
        except KafkaException as exc:
            return f"unreachable: {exc.args[0]}"
        missing = {self.cfg.events_topic, self.cfg.invalid_topic} - set(topics)
        return f"missing topics: {', '.join(sorted(missing))}" if missing else None

    def _check_redis(self) -> str | None:
        return self._redis.problem()

    def _check_mongo(self) -> str | None:
        return self._mongo.problem()


def check_all(cfg: Config) -> dict[str, str | None]:
    """Map each store to None (healthy) or a one-line reason it is not, checked now with
    clients made for this call (the test suite's and operators' one-off check)."""
    checks = HealthChecks(cfg, ttl_s=0.0)
    try:
        return checks.status()
    finally:
        checks.close()


# One breaker per store and process: the API's reads fail at once while a store that just
# failed is away (footfall/breaker.py); query.runtime puts the readers behind them.
BREAKERS = {"mongo": Breaker(), "redis": Breaker()}


def unavailable_store(exc: BaseException) -> str | None:
    """The store that is away (down, unreachable, too slow) if that is why ``exc`` was raised;
    its breaker is opened (a reader may return a cursor that fails later, outside the breaker)."""
    if isinstance(exc, StoreUnavailable):
        return exc.store
    store = (
        "redis" if isinstance(exc, counters.UNAVAILABLE) else "mongo" if isinstance(exc, mongo.UNAVAILABLE) else None
    )
    if store is not None:
        BREAKERS[store].failed()
    return store


def failed_store(exc: BaseException) -> Literal["redis", "mongo", "kafka"] | None:
    """The store whose client raised ``exc``, or None when it came from elsewhere."""
    if isinstance(exc, StoreUnavailable):  # its breaker is open: it failed moments ago
        return "redis" if exc.store == "redis" else "mongo"
    if isinstance(exc, counters.ERRORS):
        return "redis"
    if isinstance(exc, mongo.ERRORS):
        return "mongo"
    if isinstance(exc, KafkaException):
        return "kafka"
    return None
