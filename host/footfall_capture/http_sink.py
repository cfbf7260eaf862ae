"""Send a host site's events to its Footfall collector over HTTP(S), in gzip'd batches.

The HTTP transport of the middleware (issue 45): the host holds a site ingest key, not the
server's Kafka or Redis credentials. :meth:`HttpSink.send` only queues the event (a dict as
``POST /api/v1/sites/<site>/events`` takes it, with no raw IP: the visitor id is computed
with the site's salt and the IP cut to a network prefix before it gets here). A background
thread sends what is queued in batches of up to :data:`BATCH_EVENTS`, at least every
:data:`BATCH_AGE_S` seconds. A batch the collector does not take (unreachable, a timeout,
429 or 5xx, a refused key) goes to the durable spool, and the thread retries with backoff,
honouring ``Retry-After``; once the collector answers again the spool is replayed. An event
the collector rejects as malformed is counted and dropped: sending it again cannot help.
The queue is bounded (:data:`MAX_QUEUED`): past it events go straight to the spool. A batch
is sent again whole after any failure, so an event may arrive twice (a 503 midway through a
batch, an answer lost); its ``event_id`` makes the copy harmless, as the counts drop repeats.

The middleware's HTTP transport (:mod:`footfall_capture.http_transport`) gives it the events.

Standard library only (``urllib``): a guest in someone else's site brings no HTTP client.
"""

from __future__ import annotations

import atexit
import collections
import gzip
import http.client
import json
import os
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from dataclasses import dataclass, field

from footfall_capture.quiet_log import quiet_logger
from footfall_capture.spool import Spool, SpoolFull

log = quiet_logger(__name__)

BATCH_EVENTS = 500  # the collector takes up to 1,000 per request
BATCH_AGE_S = 1.0
MAX_QUEUED = 10_000  # events held in memory; past it they are spooled at once
TIMEOUT_S = 10.0
BACKOFF_S = (1.0, 2.0, 5.0, 10.0, 30.0)  # waits after successive failures; the last repeats
RETRY_AFTER_MAX_S = 300.0


class SendFailed(Exception):
    """The collector did not take a batch; ``retry_after`` is its own wait, if it gave one."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.retry_after = retry_after


def check_collector_url(url: str) -> str:
    """``url`` if it may carry a key and events: ``https://``, or ``http://`` to this machine
    itself (the key and the events cross the network); else ``ValueError``."""
    parts = urllib.parse.urlsplit(str(url))
    loopback = parts.hostname in {"localhost", "127.0.0.1", "::1"}
    if not parts.hostname or not (parts.scheme == "https" or (parts.scheme == "http" and loopback)):
        raise ValueError("the collector's URL must be https:// (http:// only on localhost)")
    return str(url)


@dataclass(frozen=True)
class Collector:
    """Where a site's events go: the collector's base URL, the site, and its ingest key."""

    url: str
    site_id: str
    key: str = field(repr=False)  # a secret: never in a log line or a traceback's locals

    def __post_init__(self) -> None:
        check_collector_url(self.url)

    def site_url(self, tail: str) -> str:
        """The URL of ``/api/v1/sites/<site>/<tail>`` on this collector."""
        return f"{self.url.rstrip('/')}/api/v1/sites/{self.site_id}/{tail}"

    @property
    def events_url(self) -> str:
        return self.site_url("events")

    def request(self, url: str, data: bytes | None = None, headers: dict[str, str] | None = None,
                ) -> urllib.request.Request:  # fmt: skip
        """A request to ``url`` with the ingest key (POST when there is ``data``)."""
        return urllib.request.Request(  # noqa: S310 - an http(s) URL: checked above
            url, data=data, method="POST" if data is not None else "GET",
            headers={"Authorization": f"Bearer {self.key}", "User-Agent": "footfall-capture", **(headers or {})},
        )  # fmt: skip


def post_batch(collector: Collector, items: list[bytes], timeout_s: float = TIMEOUT_S) -> int:
    """POST ``items`` (each one event's JSON) gzip'd; return how many the collector rejected as
    malformed. Raise :class:`SendFailed` when it did not take the batch."""
    body = gzip.compress(b"[" + b",".join(items) + b"]", compresslevel=6)
    request = collector.request(
        collector.events_url, body, {"Content-Type": "application/json", "Content-Encoding": "gzip"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310 - the operator's URL
            answer = json.loads(response.read())
    except urllib.error.HTTPError as exc:
        raise SendFailed(collector_answer(exc), _retry_after(exc)) from None
    except (OSError, http.client.HTTPException, ValueError) as exc:  # unreachable, timeout, TLS, bad JSON
        raise SendFailed(f"the collector is unreachable ({exc})") from None
    return int(answer.get("rejected", 0))


def collector_answer(exc: urllib.error.HTTPError) -> str:
    """What the collector refused with: its status and the error code of its JSON body."""
    try:
        error = str(json.loads(exc.read()).get("error", ""))
    except (OSError, ValueError, AttributeError):
        error = ""
    return f"the collector answered {exc.code}: {error}"


def _retry_after(exc: urllib.error.HTTPError) -> float | None:
    raw = exc.headers.get("Retry-After") if exc.headers else None
    try:
        return min(max(float(raw), 0.0), RETRY_AFTER_MAX_S) if raw else None
    except ValueError:  # an HTTP date: not worth parsing, the backoff applies
        return None


class HttpSink:
    """Queue events for the collector and send them in batches from a background thread;
    spool what cannot be sent, replay it when the collector answers again."""

    def __init__(self, collector: Collector, spool: Spool, timeout_s: float = TIMEOUT_S) -> None:
        self.collector = collector
        self.spool = spool
        self.timeout_s = timeout_s
        self.stats: Counter[str] = Counter()
        self._queue: collections.deque[bytes] = collections.deque()
        self._wake = threading.Condition()
        self._failures = 0  # successive failed sends
        self._next_try = 0.0  # monotonic time before which nothing is sent after a failure
        self._pid = 0
        self._closing = threading.Event()
        self._thread: threading.Thread | None = None
        self._in_flight: list[bytes] = []  # the batch the thread is sending (close() spools it if the thread hangs)

    def send(self, item: dict[str, object]) -> str:
        """Queue one event (``"queued"``), or spool it when the queue is full (``"spooled"``)."""
        self.start()
        data = json.dumps(item, separators=(",", ":")).encode()
        if self._closing.is_set() or len(self._queue) >= MAX_QUEUED:
            return self._spool([data])
        with self._wake:
            self._queue.append(data)
            if len(self._queue) >= BATCH_EVENTS:
                self._wake.notify()
        self.stats["queued"] += 1
        return "queued"

    def start(self) -> None:
        """Start this process's sending thread, once (a fork starts its own): by the first event,
        or earlier, so that events spooled by an earlier run are replayed without waiting for one."""
        if self._pid == os.getpid():
            return
        with self._wake:
            if self._pid != os.getpid():  # first use in this process (a fork starts its own thread)
                self._pid = os.getpid()
                self._queue.clear()
                self._thread = threading.Thread(target=self._run, name="footfall-http", daemon=True)
                self._thread.start()
                atexit.register(self.close)

    def _spool(self, items: list[bytes]) -> str:
        try:
            for data in items:
                self.spool.append(data)
        except (SpoolFull, OSError) as exc:
            self.stats["lost"] += len(items)
            log.critical("events lost: the collector did not take them and the spool refused them (%s)", exc)
            return "lost"
        self.stats["spooled"] += len(items)
        return "spooled"

    def _take(self) -> list[bytes]:
        with self._wake:
            count = min(BATCH_EVENTS, len(self._queue))
            return [self._queue.popleft() for _ in range(count)]

    def _run(self) -> None:
        pid = self._pid
        while not self._closing.is_set() and pid == os.getpid():
            with self._wake:
                self._wake.wait_for(lambda: len(self._queue) >= BATCH_EVENTS or self._closing.is_set(), BATCH_AGE_S)
            try:
                self._send_queued()
                if time.monotonic() >= self._next_try and self.spool.size_bytes() > 0:
                    self.replay()
            except Exception:  # the thread must survive anything and keep sending
                log.exception("sending events to the collector failed; will retry")

    def _send_queued(self) -> None:
        while self._queue and not self._closing.is_set():
            self._in_flight = batch = self._take()
            if time.monotonic() < self._next_try:  # backing off: keep the events on disk meanwhile
                self._spool(batch)
            else:
                try:
                    self._post(batch)
                except SendFailed:
                    self._spool(batch)
            self._in_flight = []

    def _post(self, batch: list[bytes]) -> None:
        """Send ``batch``; count what was sent and rejected, or note the failure and re-raise."""
        try:
            rejected = post_batch(self.collector, batch, self.timeout_s)
        except SendFailed as exc:
            wait = BACKOFF_S[min(self._failures, len(BACKOFF_S) - 1)]
            self._failures += 1
            self._next_try = time.monotonic() + (exc.retry_after if exc.retry_after is not None else wait)
            self.stats["send_failed"] += 1
            log.warning("%s; spooling events to %s", exc, self.spool.directory)
            raise
        if self._failures:
            log.info("the collector takes events again; replaying the spool")
        self._failures, self._next_try = 0, 0.0
        self.stats["sent"] += len(batch) - rejected
        if rejected:
            self.stats["rejected"] += rejected
            log.warning("the collector rejected %d malformed events of a batch", rejected)

    def replay(self) -> int:
        """Send spooled events (a batch at a time; a segment is deleted once all of it went)."""

        def deliver(records: list[bytes]) -> int:
            try:
                self._post(records)
            except SendFailed:
                return 0
            return len(records)

        result = self.spool.replay(deliver, batch=BATCH_EVENTS)
        self.stats["replayed"] += result.delivered
        return result.delivered

    def close(self, timeout_s: float = 2.0) -> None:
        """Stop the thread, send what is queued once and briefly, spool whatever is left: at exit,
        and on a SIGTERM the host's server turns into an exit. Nothing queued is lost."""
        if self._pid != os.getpid() or self._closing.is_set():
            return
        self._closing.set()
        with self._wake:
            self._wake.notify()
        if self._thread is not None:
            self._thread.join(self.timeout_s + 1.0)
        # A thread still sending (a collector that hangs) may yet deliver its batch: spooling it
        # too can only duplicate events, which the counts drop by event id; never lose them.
        left = (self._in_flight if self._thread is not None and self._thread.is_alive() else []) + self._take_all()
        if left and time.monotonic() >= self._next_try:
            batch = left[:BATCH_EVENTS]
            try:
                self.stats["sent"] += len(batch) - post_batch(self.collector, batch, timeout_s)
                left = left[BATCH_EVENTS:]  # only once sent: a failed batch is spooled below
            except SendFailed:
                pass
        if left:
            self._spool(left)
        self.spool.close()

    def _take_all(self) -> list[bytes]:
        with self._wake:
            items = list(self._queue)
            self._queue.clear()
            return items
