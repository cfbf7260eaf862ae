"""Shared helpers of the reliability scenarios: the stack's own fault commands, fresh topics,
private archives, polling with a bound, latency figures."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from deploy.local.supervisor import Supervisor
from footfall.config import Config
from footfall_capture.events import Event, InvalidEvent, decode, encode
from footfall_capture.kafka import client_config, producer_config
from footfall_capture.sink import event_key
from tests.integration.kafka_tail import send
from tests.reliability.conftest import REPO


def stack(*args: str, timeout: float = 300) -> None:
    """``python -m deploy.local.stack ARGS`` on the stack the environment points at."""
    subprocess.run(
        [sys.executable, "-m", "deploy.local.stack", *args],
        check=True, cwd=REPO, env=os.environ, timeout=timeout, stdout=subprocess.DEVNULL,
    )  # fmt: skip


@contextlib.contextmanager
def frozen(service: str) -> Iterator[None]:
    """The stack's ``service`` stopped with SIGSTOP, then continued: a hung server (a frozen VM,
    a partition that drops packets), which accepts connections and never answers."""
    pid = Supervisor(Path(os.environ["FOOTFALL_STATE_DIR"]), os.environ).pid(service)
    assert pid is not None, f"{service} is not running"
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def start_archiver(cfg: Config, topic: str, batch_size: int) -> subprocess.Popen:
    """The real archiver (``manage.py run_archiver``) on ``topic`` in a group of its own, writing
    to ``cfg``'s archive (an S3 archive's endpoint and keys come from the environment)."""
    return subprocess.Popen(
        [sys.executable, "manage.py", "run_archiver", "--topic", topic, "--group", f"arch-{topic}",
         "--batch-size", str(batch_size), "--batch-time", "1", "--session-timeout-ms", "6000"],
        cwd=REPO, env={**os.environ, "ARCHIVE_URL": cfg.archive_url},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


def produce_steadily(
    cfg: Config, topic: str, events: Sequence[Event], seconds: float, steps: int = 50
) -> threading.Thread:
    """A started thread that puts ``events`` on ``topic`` (keyed as the collector keys them) in
    ``steps`` even parts over ``seconds``, then waits until the broker has them all."""

    def run() -> None:
        out = Producer(producer_config(cfg.kafka))
        size = -(-len(events) // steps)
        t0 = time.monotonic()
        for i in range(steps):
            time.sleep(max(0.0, t0 + i * seconds / steps - time.monotonic()))
            for event in events[i * size : (i + 1) * size]:
                send(out, topic, encode(event), event_key(event))
        assert out.flush(120) == 0

    feeding = threading.Thread(target=run, daemon=True)
    feeding.start()
    return feeding


def wait_while_progressing(remaining: Callable[[], int], stall_s: float, what: str, every: float = 1.0) -> float:
    """Poll ``remaining()`` (e.g. a consumer group's lag) until it is 0; return the seconds it took.

    Fails only when it has not gone down for ``stall_s`` seconds: a consumer that is slow on a
    loaded machine passes, one that is stuck does not."""
    started = last_progress = time.monotonic()
    best = remaining()
    while best > 0:
        time.sleep(every)
        now = remaining()
        if now < best:
            best, last_progress = now, time.monotonic()
        elif time.monotonic() - last_progress > stall_s:
            raise AssertionError(f"{what}: stuck at {best} for {stall_s:.0f}s")
    return time.monotonic() - started


def wait_for(check: Callable[[], bool], timeout: float, what: str, every: float = 0.5) -> float:
    """Poll ``check`` until true; return the seconds it took, or fail saying ``what`` did not happen."""
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > timeout:
            raise AssertionError(f"{what}: not within {timeout:.0f}s")
        time.sleep(every)
    return time.monotonic() - started


@contextlib.contextmanager
def fresh_topic(cfg: Config, partitions: int = 6, prefix: str = "rel") -> Iterator[str]:
    """A new topic (like ``events``: 6 partitions), deleted afterwards."""
    admin = AdminClient(client_config(cfg.kafka))
    name = f"{prefix}-{uuid.uuid4().hex[:10]}"
    admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])[name].result(timeout=30)
    try:
        yield name
    finally:
        with contextlib.suppress(Exception):  # the broker may be the thing a failed scenario broke
            AdminClient(client_config(cfg.kafka)).delete_topics([name])[name].result(30)


def private(cfg: Config, tmp_path: Path, topic: str) -> Config:
    """``cfg`` with its own events topic and archive directory."""
    return dataclasses.replace(cfg, events_topic=topic, archive_url=(tmp_path / "archive").as_uri())


def percentiles(samples: Sequence[float]) -> dict[str, float]:
    """p50, p99 and max of ``samples`` (seconds), in milliseconds."""
    ordered = sorted(samples)
    if not ordered:
        return {"p50": 0.0, "p99": 0.0, "max": 0.0}
    at = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return {"p50": round(at(0.50) * 1000, 1), "p99": round(at(0.99) * 1000, 1), "max": round(ordered[-1] * 1000, 1)}


def topic_event_ids(cfg: Config, topic: str) -> Counter[str]:
    """How often each event id is on ``topic`` (every message up to the current end offsets)."""
    return Counter(event.event_id for event in topic_events(cfg, topic))


def topic_events(cfg: Config, topic: str) -> list[Event]:
    """Every event on ``topic`` up to the current end offsets (undecodable messages left out)."""
    consumer = Consumer(client_config(cfg.kafka, **{"group.id": f"audit-{uuid.uuid4().hex}"}))
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in partitions}
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        events: list[Event] = []
        remaining = sum(ends.values())
        deadline = time.monotonic() + 120
        while remaining > 0 and time.monotonic() < deadline:
            for msg in consumer.consume(1000, timeout=1.0):
                if msg.error() is None and msg.offset() < ends[msg.partition()]:
                    remaining -= 1
                    with contextlib.suppress(InvalidEvent):
                        events.append(decode(msg.value()))
        return events
    finally:
        consumer.close()
