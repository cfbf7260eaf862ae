"""Where accepted events go: Kafka when it takes them, the durable spool when it cannot.

One :class:`KafkaSink` per process (:func:`shared_sink`; the server's ``get_sink``). Its confluent-kafka producer is
created lazily in the process that uses it — a producer created before a fork (gunicorn
``--preload``, Celery prefork) silently never delivers — and is idempotent with
``acks=all``. A background thread polls delivery reports, so ``produce`` never fills the
local queue, and replays the spool when Kafka is reachable again. At exit the producer is
flushed; whatever is still queued is purged into the spool, so nothing acknowledged is lost.

``send`` returns ``"queued"`` (in the producer's queue; a failed delivery is spooled by
the delivery report) or ``"spooled"`` (fsync'd on disk), or raises
:class:`SinkUnavailable` when it can do neither: the HTTP layer answers 503, never 2xx.
Once the sink is closed (at exit) it spools whatever it is still given, so a job that runs
after the producer's final flush (the middleware's queue draining at exit) is not lost.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
from collections import Counter
from pathlib import Path

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from footfall_capture.events import Event, InvalidEvent, decode, encode, event_key
from footfall_capture.kafka import KafkaSettings, producer_config
from footfall_capture.quiet_log import quiet_logger
from footfall_capture.settings import CaptureSettings
from footfall_capture.spool import Spool, SpoolFull

log = quiet_logger(__name__)

PROBE_INTERVAL_S = 2.0  # how often a process that saw Kafka down checks whether it is back
# Producers that make events for others (the collector, the middleware) linger longer than
# the library's default to gather larger batches: nobody waits for a delivery (a beacon is
# answered once its event is queued), and librdkafka's broker thread pays per produce
# request. Durability is unchanged (acks=all, idempotence; a failed delivery is spooled);
# the events reach Kafka up to 0.2 s later, which counters do not notice.
COLLECTOR_PRODUCER: dict[str, object] = {"linger.ms": 200}


class SinkUnavailable(RuntimeError):
    """Neither Kafka nor the spool could take the event."""


class KafkaSink:
    """Produce events to Kafka, falling back to a durable :class:`Spool`."""

    def __init__(self, kafka: KafkaSettings, spool: Spool, **producer_overrides: object) -> None:
        self.kafka = kafka
        self.spool = spool
        self.stats: Counter[str] = Counter()
        self._overrides = producer_overrides
        self._producer: Producer | None = None
        self._pid = 0
        self._lock = threading.Lock()
        self._down_since: float | None = None
        self._closing = threading.Event()

    # --- the producer, per process -------------------------------------------------
    def _get_producer(self) -> Producer:
        if self._producer is not None and self._pid == os.getpid():
            return self._producer
        with self._lock:
            if self._producer is None or self._pid != os.getpid():
                config = producer_config(
                    self.kafka,
                    error_cb=self._on_error,
                    # Delivery reports only for failures (which the callback spools): a report
                    # per delivered event cost a Python call and a wake-up of the background
                    # thread per event, competing with request threads for the GIL. Kafka's
                    # recovery is noticed by the probe in _background instead.
                    on_delivery=self._on_delivery,
                    **{"delivery.report.only.error": True},
                )
                config.update(self._overrides)
                self._producer = Producer(config)
                self._pid = os.getpid()
                self._down_since = None
                self._closing = threading.Event()
                threading.Thread(target=self._background, name="footfall-sink", daemon=True).start()
                atexit.register(self.close)
        return self._producer

    def _on_error(self, err: KafkaError) -> None:
        refusal = self.kafka.security.describe(err)
        if refusal is not None:
            # The brokers refuse us (wrong password, untrusted certificate): spool until an
            # operator fixes the setting named and restarts, then the spool is replayed.
            if self._down_since is None:
                log.error("%s; spooling events to %s", refusal, self.spool.directory)
            self._down_since = time.monotonic()
            return
        if err.code() == KafkaError._ALL_BROKERS_DOWN:
            if self._down_since is None:
                log.warning("Kafka unreachable (%s); spooling events to %s", err.str(), self.spool.directory)
            self._down_since = time.monotonic()

    @property
    def kafka_down(self) -> bool:
        return self._down_since is not None

    # --- sending -------------------------------------------------------------------
    def send(self, event: Event) -> str:
        """Queue ``event`` to Kafka or spool it; return ``"queued"`` or ``"spooled"``."""
        return self.send_raw(encode(event), event_key(event))

    def send_raw(self, data: bytes, key: bytes) -> str:
        producer = self._get_producer()
        if self._down_since is not None or self._closing.is_set():
            return self._spool(data)
        try:
            producer.produce(self.kafka.events_topic, data, key=key)  # failures: self._on_delivery
        except (BufferError, KafkaException) as exc:
            log.debug("producer refused an event (%s); spooling", exc)
            return self._spool(data)
        self.stats["queued"] += 1
        return "queued"

    def send_invalid(self, data: bytes, error: InvalidEvent) -> None:
        """Best effort: record an event that failed validation on the invalid-events topic,
        with its reason in the headers (the client gets a 400 either way)."""
        try:
            self._get_producer().produce(
                self.kafka.invalid_topic,
                data,
                headers={"reason": error.reason, "detail": error.detail[:500], "source": "collector"},
            )
        except (BufferError, KafkaException):
            log.warning("could not record an invalid event (%s)", error.reason)
        self.stats[f"invalid_{error.reason}"] += 1

    def _spool(self, data: bytes) -> str:
        try:
            self.spool.append(data)
        except (SpoolFull, OSError) as exc:
            self.stats["unavailable"] += 1
            raise SinkUnavailable(str(exc)) from exc
        self.stats["spooled"] += 1
        return "spooled"

    def _on_delivery(self, err: KafkaError | None, msg: Message) -> None:
        if err is None:  # not reported (delivery.report.only.error), unless overridden
            return
        self.stats["delivery_failed"] += 1
        try:
            self.spool.append(msg.value())
            self.stats["spooled"] += 1
        except (SpoolFull, OSError):
            # Already acknowledged to a client and now neither in Kafka nor on disk: the
            # one loss this design cannot prevent (a full spool during a long outage).
            self.stats["lost"] += 1
            log.critical("event lost: delivery failed (%s) and the spool refused it", err.str())

    # --- background: delivery reports, recovery probe, spool replay ------------------
    def _background(self) -> None:
        producer, pid = self._producer, self._pid
        last_probe = 0.0
        while not self._closing.is_set() and pid == os.getpid() and producer is self._producer:
            producer.poll(0.2)
            now = time.monotonic()
            if now - last_probe < PROBE_INTERVAL_S:
                continue
            last_probe = now
            try:
                if self._down_since is not None:
                    producer.list_topics(self.kafka.events_topic, timeout=1.0)
                    log.info("Kafka reachable again; replaying the spool")
                    self._down_since = None
                if self.spool.size_bytes() > 0:
                    self.replay()
            except KafkaException:
                self._down_since = self._down_since or now
            except Exception:  # the thread must survive anything and keep polling
                log.exception("spool replay failed; will retry")

    def replay(self, timeout: float = 30.0) -> int:
        """Move spooled events to Kafka (waiting for acks); return how many were delivered."""
        # A producer of its own, with a report for every message: the sink's producer reports
        # failures only, and flushing it would also wait for the live traffic it carries.
        producer = Producer(producer_config(self.kafka, **self._overrides))

        def deliver(records: list[bytes]) -> int:
            results: list[KafkaError | None] = []
            for data in records:
                try:
                    key = event_key(decode(data))
                except InvalidEvent:
                    key = None  # the consumers route it to events.invalid with a reason
                producer.produce(
                    self.kafka.events_topic, data, key=key, on_delivery=lambda err, _m: results.append(err)
                )
                producer.poll(0)
            producer.flush(timeout)
            ok = sum(1 for err in results if err is None)
            return ok if ok == len(records) else 0  # keep the whole segment on any failure

        try:
            result = self.spool.replay(deliver)
        finally:
            producer.flush(timeout)  # nothing should be left; never destroy it with messages queued
        self.stats["replayed"] += result.delivered
        return result.delivered

    def flush(self, timeout: float = 10.0) -> int:
        """Wait for queued events to be delivered; return how many are still queued."""
        return self._get_producer().flush(timeout) if self._producer is not None else 0

    def close(self, timeout: float = 10.0) -> None:
        """Flush; purge whatever Kafka did not take into the spool (delivery reports do it)."""
        if self._producer is None or self._pid != os.getpid() or self._closing.is_set():
            return  # not ours (a parent's, inherited by fork), or closed already (atexit after an explicit close)
        self._closing.set()
        remaining = self._producer.flush(timeout)
        if remaining:
            self._producer.purge(in_queue=True, in_flight=False)
            self._producer.flush(1.0)
        self.spool.close()


_shared: dict[tuple[KafkaSettings, Path, int], KafkaSink] = {}
_shared_lock = threading.Lock()


def shared_sink(capture: CaptureSettings) -> KafkaSink:
    """The process's sink for a host site's settings: one producer and one spool however many
    times Django builds the middleware (each test client, each handler)."""
    assert capture.kafka is not None  # the Kafka transport's settings
    key = (capture.kafka, capture.spool_dir, capture.spool_max_bytes)
    with _shared_lock:
        sink = _shared.get(key)
        if sink is None:
            spool = Spool(capture.spool_dir, capture.spool_max_bytes)
            sink = _shared[key] = KafkaSink(capture.kafka, spool, **COLLECTOR_PRODUCER)
    return sink
