"""At most one log line per kind of failure a minute (footfall_capture/quiet_log.py)."""

from __future__ import annotations

import logging
import time
import uuid

import pytest
from confluent_kafka import Producer

from footfall_capture.kafka import KAFKA_LOG
from footfall_capture.quiet_log import OncePerKind, librdkafka_kind, quiet_logger
from tests.ports import free_port


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def record(
    msg: str, *args: object, name: str = "footfall_capture.sink", level: int = logging.WARNING
) -> logging.LogRecord:
    return logging.LogRecord(name, level, __file__, 1, msg, args, None)


def test_one_line_per_kind_a_minute_and_the_next_says_how_many_were_held_back() -> None:
    clock = Clock()
    quiet = OncePerKind(clock=clock)
    unreachable = [record("Kafka unreachable (%s)", f"try {n}") for n in range(30)]
    assert quiet.filter(unreachable[0])
    for n in range(1, 30):  # one every 2 s: a minute's worth
        clock.now += 1.99
        assert not quiet.filter(unreachable[n])
    assert quiet.filter(record("spool replay failed"))  # another kind is not held back by the first
    clock.now += 2.5  # 60.2 s after the first passed
    later = record("Kafka unreachable (%s)", "try 31")
    assert quiet.filter(later)
    assert later.getMessage() == "Kafka unreachable (try 31) [29 more like this since the last one logged]"
    clock.now += 1.0
    assert not quiet.filter(record("Kafka unreachable (%s)", "try 32"))


def test_levels_and_loggers_are_kinds_of_their_own() -> None:
    quiet = OncePerKind(clock=Clock())
    assert quiet.filter(record("x"))
    assert quiet.filter(record("x", level=logging.ERROR))
    assert quiet.filter(record("x", name="footfall_capture.salts"))
    assert not quiet.filter(record("x"))


def test_librdkafka_lines_are_kinds_by_their_facility() -> None:
    quiet = OncePerKind(librdkafka_kind, clock=Clock())
    line = "%s [%s] %s"
    assert quiet.filter(record(line, "FAIL", "rdkafka#producer-1", "a:1/bootstrap: Connect failed", name="k"))
    assert not quiet.filter(record(line, "FAIL", "rdkafka#producer-2", "b:2/bootstrap: Connect failed", name="k"))
    assert quiet.filter(record(line, "ERROR", "rdkafka#producer-1", "1/1 brokers are down", name="k"))


def test_the_kafka_clients_logger_is_quiet() -> None:
    assert [type(f) for f in KAFKA_LOG.filters] == [OncePerKind]


def test_a_producer_with_no_broker_logs_one_line_of_each_kind(caplog: pytest.LogCaptureFixture) -> None:
    """A real librdkafka client refused by a closed port: hundreds of lines a minute unfiltered.
    A logger of its own, as KAFKA_LOG's filter is shared by the process's other tests."""
    logger = quiet_logger(f"test.kafka.{uuid.uuid4().hex[:6]}", librdkafka_kind)
    caplog.set_level(logging.DEBUG, logger=logger.name)
    producer = Producer(
        {"bootstrap.servers": f"127.0.0.1:{free_port()}", "logger": logger, "reconnect.backoff.max.ms": 100}
    )
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:
        producer.poll(0.1)
    kinds = [r.args[0] for r in caplog.records if r.name == logger.name]
    assert "FAIL" in kinds
    assert len(kinds) == len(set(kinds)), kinds
