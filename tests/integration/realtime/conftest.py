"""Realtime tests: real Redis, worker processes started and killed for real."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest
import redis

from footfall.config import Config
from footfall.vocabulary import EVENT_DIMENSIONS, ref_label
from footfall_capture.events import Event
from realtime.keys import KeyLayout
from realtime.reads import RealtimeQueries
from realtime.runtime import store_for
from realtime.store import CounterStore

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def store(cfg: Config) -> CounterStore:
    return CounterStore(redis.Redis.from_url(cfg.redis_url), KeyLayout())


def shard_urls() -> str:
    """The stack's Redis shards (``stack start redis-shards``), as ``FOOTFALL_REALTIME_REDIS_URLS``
    lists them: ``stack env`` exports them (``test.sh`` starts the shards)."""
    urls = os.environ.get("FOOTFALL_REDIS_SHARD_URLS", "")
    if len(urls.split(",")) < 2:
        pytest.fail("no Redis shards: start them with deploy/local/test.sh (stack start redis-shards)", pytrace=False)
    return urls


def sharded_store(cfg: Config) -> CounterStore:
    """The counter store a worker configured with the stack's shards uses."""
    return store_for(dataclasses.replace(cfg, realtime_redis_urls=tuple(shard_urls().split(","))))


class Workers:
    """Realtime worker processes (``manage.py run_realtime``) on one topic and group, with the
    test's environment and ``env`` on top (e.g. ``FOOTFALL_REALTIME_REDIS_URLS``)."""

    def __init__(self, topic: str, group: str, env: Mapping[str, str] | None = None) -> None:
        self.topic, self.group = topic, group
        self.env = {**os.environ, **(env or {})}
        self.procs: list[subprocess.Popen] = []
        self.kills = 0

    def start(self) -> subprocess.Popen:
        proc = subprocess.Popen(
            [sys.executable, "manage.py", "run_realtime", "--topic", self.topic, "--group", self.group,
             "--batch-size", "500", "--batch-time", "0.2", "--session-timeout-ms", "6000"],
            cwd=REPO, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
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
    """True when the offsets recorded with the counts reached the topic's end offsets, on every shard."""
    for recorded in store.recorded_offsets(group):
        got = {int(k.rsplit(":", 1)[1]): v for k, v in recorded.items() if k.startswith(f"{topic}:")}
        if not all(got.get(p, 0) >= end for p, end in ends.items() if end > 0):
            return False
    return True


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


def answers(store: CounterStore, site: str, start_ms: int, end_ms: int) -> dict[str, object]:
    """What the query layer answers about ``site`` over ``[start_ms, end_ms)`` that must be exact,
    however the counters are sharded: page views and events per minute and per hour, page views
    per value of every dimension, and the totals but visitors (HyperLogLog estimates)."""
    queries = RealtimeQueries(store)
    totals = queries.totals(site, start_ms, end_ms)
    per_value = {f"pageviews per {dim}": queries.ranking(site, dim, start_ms, end_ms, 1000) for dim in EVENT_DIMENSIONS}
    return {
        "pageviews per minute": queries.timeseries(site, "pageviews", start_ms, end_ms),
        "events per minute": queries.timeseries(site, "events", start_ms, end_ms),
        "pageviews per hour": queries.timeseries(site, "pageviews", start_ms, end_ms, interval="hour"),
        **per_value,
        "totals": {name: value for name, value in totals.items() if name != "visitors"},
    }
