"""A background thread for tracking work, for callers that must never wait (the middleware).

The host app's response does not depend on its event, so building, enriching and delivering
the event happen off the request path, in batches, on one thread per process.
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

log = logging.getLogger(__name__)


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

    A job that raises :class:`TryLater` cannot run yet (a store it needs is unreachable): it
    is kept, in memory, counted against ``maxsize``, and run again with the next batch, or
    after ``retry_interval`` seconds if nothing else comes.

    The queue is a :class:`queue.SimpleQueue` because ``submit`` runs on the host's request
    threads, and a put in C is the cheapest hand-over there is.
    """

    def __init__(self, maxsize: int = 10_000, interval: float = 0.1, retry_interval: float = 5.0) -> None:
        # The interval is long enough for a wake-up to serve many events under load (each one
        # has to win the GIL back from busy request threads) and short enough to go unnoticed.
        self.stats: Counter[str] = Counter()
        self.maxsize = maxsize
        self.interval = interval
        self.retry_interval = retry_interval
        self._pid = 0
        self._last_warning = 0.0
        self._new_process_state()

    def _new_process_state(self) -> None:
        # Per process: the parent's queued jobs are the parent's to run (a fork copies them).
        self._jobs: queue.SimpleQueue[Callable[[], object] | _Drained] = queue.SimpleQueue()
        self._running = 0  # jobs taken from the queue and not finished yet
        self._later: list[Callable[[], object] | _Drained] = []  # jobs that raised TryLater, oldest first

    def submit(self, job: Callable[[], object]) -> bool:
        if self._pid != os.getpid():
            self._start()
        jobs = self._jobs
        if jobs.qsize() + len(self._later) >= self.maxsize:  # two threads may both pass: bounded all the same
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
            try:  # blocks while there is nothing to do, or nothing but jobs to try later
                batch = [*self._later, jobs.get(timeout=self.retry_interval if self._later else None)]
            except queue.Empty:
                batch = list(self._later)
            self._later = []
            self._running = len(batch)
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
                    self.stats["ran"] += 1
                except TryLater:
                    self._later.append(job)
                except Exception as exc:  # SinkUnavailable or a bug: count it, never kill the thread
                    self.failed("failed", exc)
            self._running = 0
            for marker in drained:  # after the whole batch: pending() reads 0 once drain returns
                if self._later:
                    self._later.append(marker)  # jobs before it are still to run
                else:
                    marker.set()

    def pending(self) -> int:
        """Jobs submitted and not finished yet (approximate while the worker takes a job from
        the queue; :meth:`drain` is exact)."""
        return self._jobs.qsize() + self._running + sum(type(job) is not _Drained for job in self._later)

    def drain(self, timeout: float = 5.0) -> bool:
        """Wait (at most ``timeout`` seconds) until every job submitted before this call has
        run; whether they all did. Queues a marker behind them and waits for it to be reached."""
        if self._pid != os.getpid():
            return True  # no worker in this process (or only the parent's, inherited by fork)
        marker = _Drained()
        self._jobs.put(marker)
        return marker.wait(timeout)


class TryLater(Exception):
    """Raised by a job that cannot run yet; the worker keeps it and runs it again later."""


class _Drained(threading.Event):
    """A :meth:`BackgroundWorker.drain` marker in the job queue: set by the worker once the
    batch that holds it has run (so every job queued before it has)."""


_start_lock = threading.Lock()
# A fork while another thread holds the lock would leave it locked forever in the child.
os.register_at_fork(after_in_child=lambda: globals().update(_start_lock=threading.Lock()))
