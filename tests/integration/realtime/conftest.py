"""Realtime tests: real Redis, worker processes started and killed for real."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
import redis

from footfall.config import Config
from footfall.vocabulary import ref_label
from footfall_capture.events import Event
from realtime.keys import KeyLayout
from realtime.store import CounterStore

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def store(cfg: Config) -> CounterStore:
    return CounterStore(redis.Redis.from_url(cfg.redis_url), KeyLayout())


class Workers:
    """Realtime worker processes (``manage.py run_realtime``) on one topic and group."""

    def __init__(self, topic: str, group: str) -> None:
        self.topic, self.group = topic, group
        self.procs: list[subprocess.Popen] = []
        self.kills = 0

    def start(self) -> subprocess.Popen:
        proc = subprocess.Popen(
            [sys.executable, "manage.py", "run_realtime", "--topic", self.topic, "--group", self.group,
             "--batch-size", "500", "--batch-time", "0.2", "--session-timeout-ms", "6000"],
            cwd=REPO, env=os.environ, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self.procs.append(proc)
        return proc

    def kill9(self, proc: subprocess.Popen) -> None:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        self.procs.remove(proc)
        self.kills += 1

    def stop(self) -> None:
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        self.procs.clear()


@pytest.fixture
def workers(rt_topic: str) -> Iterator[Workers]:
    pool = Workers(rt_topic, f"g-{rt_topic}")
    yield pool
    pool.stop()


def consumed(store: CounterStore, group: str, topic: str, ends: dict[int, int]) -> bool:
    """True when the offsets recorded with the counts reached the topic's end offsets."""
    recorded = store.client.hgetall(store.layout.offsets(group))
    got = {int(k.decode().rsplit(":", 1)[1]): int(v) for k, v in recorded.items() if k.decode().startswith(f"{topic}:")}
    return all(got.get(p, 0) >= end for p, end in ends.items() if end > 0)


def wait_consumed(store: CounterStore, group: str, topic: str, ends: dict[int, int], timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not consumed(store, group, topic, ends):
        if time.monotonic() > deadline:
            raise AssertionError(f"workers did not consume {topic} to {ends} within {timeout}s")
        time.sleep(0.5)


def truth(events: Sequence[Event]) -> dict[str, Counter]:
    """Exact distinct counts of page views per minute, page and referrer domain."""
    distinct = {e.event_id: e for e in events}.values()
    return {
        "minute": Counter(e.ts // 60_000 for e in distinct),
        "page": Counter(e.path for e in distinct),
        "ref": Counter(ref_label(e.ref_domain, e.referrer) for e in distinct),
        "visitors": Counter({v: 1 for v in {e.visitor_id for e in distinct}}),
    }
