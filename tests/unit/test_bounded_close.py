"""Closing a group consumer returns within a limit, even when librdkafka's close does not."""

from __future__ import annotations

import logging
import threading
import time

import pytest
from arroyo.backends.kafka import KafkaConsumer, build_kafka_consumer_configuration

from footfall.kafka_client import CLOSE_LIMIT_S, REJOIN_LIMIT_S, BoundedCloseConsumer, close_within


def test_a_close_that_returns_is_waited_for() -> None:
    calls: list[str] = []
    assert close_within(lambda: calls.append("closed"), 5.0, "x") is True
    assert calls == ["closed"]


def test_a_close_that_raises_raises_in_the_caller() -> None:
    def close() -> None:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        close_within(close, 5.0, "x")


def test_a_close_that_hangs_is_left_behind_after_the_limit(caplog: pytest.LogCaptureFixture) -> None:
    release, finished = threading.Event(), threading.Event()

    def close() -> None:  # librdkafka waiting for a coordinator that does not answer
        release.wait(30)
        finished.set()

    started = time.monotonic()
    with caplog.at_level(logging.ERROR, logger="footfall.kafka"):
        assert close_within(close, 0.3, "the Kafka consumer") is False
    waited = time.monotonic() - started
    assert 0.3 <= waited < 10  # the limit, not the hang (upper bound loose: a shared machine)
    assert "closing the Kafka consumer took over 0s" in caplog.text
    assert not finished.is_set()
    release.set()  # the abandoned call ends whenever it ends, on its own thread
    assert finished.wait(10)


def test_the_consumer_close_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """The group consumer the archiver and the realtime worker use goes through close_within."""
    release = threading.Event()
    closed: list[str] = []

    def hanging_close(self: KafkaConsumer, timeout: float | None = None) -> None:
        release.wait(30)
        closed.append("late")

    monkeypatch.setattr(KafkaConsumer, "close", hanging_close)
    config = build_kafka_consumer_configuration({"bootstrap.servers": "127.0.0.1:1"}, group_id="bounded-close-test")
    consumer = BoundedCloseConsumer(config)
    consumer.close_limit_s = 0.3
    started = time.monotonic()
    consumer.close()
    assert time.monotonic() - started < 10
    assert closed == []
    release.set()
    monkeypatch.undo()
    KafkaConsumer.close(consumer)  # the real client, closed for good (it never connected)


def test_a_stuck_consumer_is_replaced_well_inside_a_rejoin_limit() -> None:
    assert CLOSE_LIMIT_S < REJOIN_LIMIT_S / 2
