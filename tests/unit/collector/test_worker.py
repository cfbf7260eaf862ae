"""The middleware's background worker, and the sink's behaviour once closed (no Kafka needed)."""

from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path

from footfall.config import Config
from footfall_capture.sink import KafkaSink
from footfall_capture.spool import Spool
from footfall_capture.worker import BackgroundWorker


class CountingWorker(BackgroundWorker):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.threads_started = 0

    def _run(self) -> None:
        self.threads_started += 1
        super()._run()


def test_simultaneous_first_jobs_start_one_worker_thread() -> None:
    """Request threads submitting their first jobs at the same moment used to start two workers."""
    worker = CountingWorker(interval=0.001)
    done: list[int] = []
    lock = threading.Lock()
    barrier = threading.Barrier(16)

    def submit(i: int) -> None:
        barrier.wait()
        worker.submit(lambda: (lock.acquire(), done.append(i), lock.release()))

    threads = [threading.Thread(target=submit, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert worker.drain(5)
    assert worker.threads_started == 1
    assert sorted(done) == list(range(16))
    assert worker.stats["ran"] == 16


def test_jobs_run_in_batches_and_drain_waits_for_them() -> None:
    worker = BackgroundWorker(interval=0.05)
    ran: list[int] = []
    for i in range(200):
        assert worker.submit(lambda i=i: ran.append(i))
    assert worker.drain(5)
    assert ran == list(range(200))  # in order
    assert worker.pending() == 0


def test_a_full_queue_drops_and_counts_and_a_failing_job_is_counted() -> None:
    worker = BackgroundWorker(maxsize=3, interval=0.01)
    running, release = threading.Event(), threading.Event()
    assert worker.submit(lambda: (running.set(), release.wait(5)))
    assert running.wait(5)  # the worker is busy with it: what follows waits in the queue
    results = [worker.submit(lambda: None) for _ in range(5)]
    assert results == [True, True, True, False, False]
    assert worker.stats["dropped_queue_full"] == 2
    release.set()
    assert worker.drain(5)

    def broken() -> None:
        raise RuntimeError("boom")

    worker.submit(broken)
    worker.submit(lambda: None)  # the thread survives a failing job
    assert worker.drain(5)
    assert (worker.stats["failed"], worker.stats["ran"]) == (1, 5)


def test_drain_waits_for_the_jobs_before_it_and_says_whether_they_ran() -> None:
    worker = BackgroundWorker(interval=0.01)
    release = threading.Event()
    ran: list[str] = []
    worker.submit(lambda: (release.wait(5), ran.append("slow")))
    assert worker.drain(0.2) is False  # the slow job holds the worker: not drained in time
    assert worker.pending() >= 1
    worker.submit(lambda: ran.append("after"))
    release.set()
    assert worker.drain(5) is True
    assert ran == ["slow", "after"]
    assert worker.pending() == 0
    assert worker.stats["ran"] == 2  # drain's markers are not jobs
    assert BackgroundWorker().drain(0) is True  # nothing ever submitted in this process


def test_a_closed_sink_spools_what_it_is_still_given(cfg: Config, tmp_path: Path) -> None:
    """At exit the producer is flushed and closed; a job that still runs afterwards (the
    middleware's queue draining) must land in the spool, not in a producer nobody polls."""
    dead = dataclasses.replace(cfg, kafka_bootstrap_servers="127.0.0.1:1")
    sink = KafkaSink(dead.kafka, Spool(tmp_path, 1 << 20))
    sink._get_producer()
    started = time.monotonic()
    sink.close(timeout=1)
    sink.close(timeout=1)  # again (atexit after an explicit close): returns at once
    assert time.monotonic() - started < 5
    assert sink.send_raw(b'{"late": true}', b"key") == "spooled"
    assert sink.spool.pending() == 1
