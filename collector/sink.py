"""Where accepted events go: Kafka when it takes them, the durable spool when it cannot.

One :class:`KafkaSink` per process (:func:`get_sink`). Its confluent-kafka producer is
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
import logging
import os
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from collector.spool import Spool, SpoolFull
from footfall.config import Config
from footfall.events import Event, InvalidEvent, decode, encode
from footfall.kafka_client import producer_config

log = logging.getLogger(__name__)

PROBE_INTERVAL_S = 2.0  # how often a process that saw Kafka down checks whether it is back
# The collector's producer lingers 200 ms (the project's default is 5 ms) to gather larger
# batches: nobody waits for a delivery (a beacon is answered once its event is queued), and
# librdkafka's broker thread pays per produce request, i.e. per partition and linger window
# (events are keyed by visitor, so they spread over every partition). Measured at ~450 events/s
# into the 6-partition topic: ~54 µs of broker-thread CPU per event at 5 ms, ~21 at 50 ms,
# ~5 at 200-250 ms (and 47-87 µs per event at 50 ms inside a busy gunicorn worker, a third of
# the middleware's cost). Durability is unchanged (acks=all, idempotence; a failed delivery
# is spooled); the events reach Kafka up to 0.2 s later, which counters do not notice.
COLLECTOR_PRODUCER: dict[str, object] = {"linger.ms": 200}


class SinkUnavailable(RuntimeError):
    """Neither Kafka nor the spool could take the event."""


def event_key(event: Event) -> bytes:
    """Partition key: one visitor's events stay on one partition, in order."""
    return (event.visitor_id or event.event_id).encode()


class KafkaSink:
    """Produce events to Kafka, falling back to a durable :class:`Spool`."""

    def __init__(self, cfg: Config, spool: Spool, **producer_overrides: object) -> None:
        self.cfg = cfg
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
                    self.cfg,
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
            producer.produce(self.cfg.events_topic, data, key=key)  # failures: self._on_delivery
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
                self.cfg.invalid_topic,
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
                    producer.list_topics(self.cfg.events_topic, timeout=1.0)
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
        producer = Producer(producer_config(self.cfg, **self._overrides))

        def deliver(records: list[bytes]) -> int:
            results: list[KafkaError | None] = []
            for data in records:
                try:
                    key = event_key(decode(data))
                except InvalidEvent:
                    key = None  # the consumers route it to events.invalid with a reason
                producer.produce(self.cfg.events_topic, data, key=key, on_delivery=lambda err, _m: results.append(err))
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


class BackgroundWorker:
    """Run tracking jobs on a worker thread, for callers that must never wait.

    The Django middleware uses it: the host app's response does not depend on the event,
    so enrichment and delivery happen off the request path. A full queue (``maxsize`` jobs
    waiting) drops the job and counts it (``stats["dropped_queue_full"]``) rather than slowing
    the host.

    Jobs run in batches: once woken, the thread waits ``interval`` seconds and then runs
    everything queued meanwhile. Under load that makes one wake-up (and one hand-over of
    the GIL from the request threads) serve many events instead of one each, and the
    producer gets them in bursts it batches well; an event is delivered at most
    ``interval`` later, which nobody sees. An idle worker blocks on the queue: no polling.

    The queue is a :class:`queue.SimpleQueue`: ``submit`` runs on the host's request threads,
    and its ``put`` (in C) costs them a seventh of the instructions a lock, a deque and a
    condition's ``notify`` did (~5,000 per page view; ``bench.collector_instructions``).
    """

    def __init__(self, maxsize: int = 10_000, interval: float = 0.1) -> None:
        # 100 ms (was 20): each wake-up has to win the GIL back from busy request threads. In a
        # loaded gunicorn worker most of the tracker thread's py-spy samples were in its
        # sleep/wait lines rather than in events; 100 ms took its CPU per event from ~61 to
        # ~49 µs (a shared machine: noisy). Events reach the producer at most 0.1 s later.
        self.stats: Counter[str] = Counter()
        self.maxsize = maxsize
        self.interval = interval
        self._pid = 0
        self._last_warning = 0.0
        self._new_process_state()

    def _new_process_state(self) -> None:
        # Per process: the parent's queued jobs are the parent's to run (a fork copies them).
        self._jobs: queue.SimpleQueue[Callable[[], object] | _Drained] = queue.SimpleQueue()
        self._running = 0  # jobs taken from the queue and not finished yet

    def submit(self, job: Callable[[], object]) -> bool:
        if self._pid != os.getpid():
            self._start()
        jobs = self._jobs
        if jobs.qsize() >= self.maxsize:  # two threads may both pass at the limit: bounded all the same
            self.failed("dropped_queue_full")
            return False
        jobs.put(job)
        return True

    def _start(self) -> None:
        """Start this process's worker thread, once: under a lock, because two request threads
        submitting their first job at the same moment used to start two workers."""
        with _start_lock:
            if self._pid == os.getpid():
                return  # another thread started it while this one waited
            self._new_process_state()
            threading.Thread(target=self._run, name="footfall-tracker", daemon=True).start()
            atexit.register(self.drain)
            self._pid = os.getpid()  # last: a thread that sees it may rely on the worker existing

    def failed(self, what: str, exc: BaseException | None = None) -> None:
        """Count a tracking failure; log at most once a minute so a broken tracker
        cannot flood the host's logs."""
        self.stats[what] += 1
        now = time.monotonic()
        if now - self._last_warning >= 60:
            self._last_warning = now
            log.warning("footfall tracking failures so far: %s", dict(self.stats), exc_info=exc)

    def _run(self) -> None:
        jobs = self._jobs
        while True:
            batch = [jobs.get()]  # blocks while there is nothing to do
            self._running = 1
            time.sleep(self.interval)  # let the batch fill
            batch.extend(jobs.get_nowait() for _ in range(jobs.qsize()))  # only this thread takes
            self._running = len(batch)
            drained: list[_Drained] = []
            for job in batch:
                if type(job) is _Drained:
                    drained.append(job)
                    continue
                try:
                    job()
                    self.stats["sent"] += 1
                except Exception as exc:  # SinkUnavailable or a bug: count it, never kill the thread
                    self.failed("failed", exc)
            self._running = 0
            for marker in drained:  # after the whole batch: pending() reads 0 once drain returns
                marker.set()

    def pending(self) -> int:
        """Jobs submitted and not finished yet (approximate while the worker takes a job from
        the queue; :meth:`drain` is exact)."""
        return self._jobs.qsize() + self._running

    def drain(self, timeout: float = 5.0) -> bool:
        """Wait (at most ``timeout`` seconds) until every job submitted before this call has
        run; whether they all did. Queues a marker behind them and waits for it to be reached."""
        if self._pid != os.getpid():
            return True  # no worker in this process (or only the parent's, inherited by fork)
        marker = _Drained()
        self._jobs.put(marker)
        return marker.wait(timeout)


class _Drained(threading.Event):
    """A :meth:`BackgroundWorker.drain` marker in the job queue: set by the worker once the
    batch that holds it has run (so every job queued before it has)."""


_start_lock = threading.Lock()
# A fork while another thread holds the lock would leave it locked forever in the child.
os.register_at_fork(after_in_child=lambda: globals().update(_start_lock=threading.Lock()))

_sink: KafkaSink | None = None
_sink_lock = threading.Lock()


def get_sink(cfg: Config) -> KafkaSink:
    """The process's sink (its producer is created lazily, after any fork)."""
    global _sink
    if _sink is None:
        with _sink_lock:
            if _sink is None:
                _sink = KafkaSink(cfg, Spool(cfg.spool_dir, cfg.spool_max_bytes), **COLLECTOR_PRODUCER)
    return _sink
