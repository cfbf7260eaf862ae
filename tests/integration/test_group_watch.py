"""A consumer kept out of its group ends its processor's run, over a real broker: the
archiver's (arroyo) and the realtime worker's (a confluent-kafka batch loop).

The real failure (librdkafka never rejoining after a broker restart) cannot be caused on
demand, so this holds the watched consumer out of its group the way a real group can: a
second member that stops serving its rebalance callback (it does not poll) keeps every
rejoin waiting for up to its rebalance timeout. The watch must notice within its limit,
end ``run()`` (the command then builds a new processor), and never fire while the
archiver is a steady member.
"""

from __future__ import annotations

import dataclasses
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer

from archive.archiver import build_archiver
from footfall.config import Config
from footfall.kafka_client import GroupWatch
from footfall.supervise import Processor
from footfall_capture.kafka import client_config
from realtime.consumer import build_processor
from realtime.runtime import store_for

LIMIT_S = 8.0


def run_in_thread(target: object) -> tuple[threading.Thread, list[BaseException]]:
    errors: list[BaseException] = []

    def body() -> None:
        try:
            target()  # type: ignore[operator]
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    return thread, errors


Build = Callable[[GroupWatch], Processor]


def archiver(cfg: Config, group: str, topic: str, tmp_path: Path) -> Build:
    acfg = dataclasses.replace(cfg, archive_url=(tmp_path / "archive").as_uri())
    return lambda watch: build_archiver(acfg, group, topic, 100, 1.0, 6000, watch)[0]


def realtime_worker(cfg: Config, group: str, topic: str, tmp_path: Path) -> Build:
    store = store_for(cfg)
    return lambda watch: build_processor(cfg, store, group, topic, 100, 1.0, 6000, watch=watch)


@pytest.mark.parametrize("make", [archiver, realtime_worker])
def test_a_consumer_held_out_of_its_group_is_let_go_and_a_steady_one_is_not(
    cfg: Config, kafka_topic: str, tmp_path: Path, make: Callable[[Config, str, str, Path], Build]
) -> None:
    group = f"watch-{uuid.uuid4().hex[:8]}"
    build = make(cfg, group, kafka_topic, tmp_path)

    # 1. Alone in its group, the consumer settles and the watch stays quiet.
    steady_watch = GroupWatch(limit_s=LIMIT_S)
    processor = build(steady_watch)
    thread, errors = run_in_thread(processor.run)
    deadline = time.monotonic() + 60
    while steady_watch.state != "up/steady" and time.monotonic() < deadline:
        time.sleep(0.5)
    assert steady_watch.state == "up/steady", f"the consumer never settled in its group: {steady_watch.state}"
    time.sleep(LIMIT_S + 2)
    assert not steady_watch.stuck
    assert thread.is_alive(), "run() ended although the consumer was a steady member"
    processor.signal_shutdown()
    thread.join(60)
    assert not errors

    # 2. A member that never serves its rebalance holds every rejoin for its rebalance timeout.
    laggard = Consumer(
        client_config(
            cfg.kafka,
            **{
                "group.id": group,
                "partition.assignment.strategy": "roundrobin",
                "session.timeout.ms": 30_000,
                "max.poll.interval.ms": 120_000,  # the rebalance timeout the others wait for
            },
        )
    )
    assigned = threading.Event()
    laggard.subscribe([kafka_topic], on_assign=lambda _c, _p: assigned.set())
    deadline = time.monotonic() + 60
    while not assigned.is_set() and time.monotonic() < deadline:
        laggard.poll(0.5)
    assert assigned.is_set(), "the laggard never joined"
    try:
        # From now on the laggard never polls: its revoke callback is never served.
        watch = GroupWatch(limit_s=LIMIT_S)
        processor = build(watch)
        started = time.monotonic()
        thread, errors = run_in_thread(processor.run)
        thread.join(LIMIT_S + 60)
        took = time.monotonic() - started
        assert not thread.is_alive(), f"run() still going after {took:.0f}s; the group was {watch.state}"
        assert not errors, errors
        assert watch.stuck
        assert took >= LIMIT_S
        assert watch.state != "up/steady"
    finally:
        laggard.close()
