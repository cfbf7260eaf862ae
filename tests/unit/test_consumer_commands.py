"""The long-running consumers (``run_archiver``, ``run_realtime``) survive a Kafka failure.

arroyo lets a broker error raised under the consumer escape ``processor.run()`` (e.g. a
``KafkaException`` from the partition-assignment callback when the broker goes away while
partitions are assigned); the command must rebuild the processor after a back-off, not exit.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from types import SimpleNamespace

import pytest
from confluent_kafka import KafkaError, KafkaException
from django.core.management import call_command


class FlakyProcessor:
    """Fails its first run like a broker going away; the second run stops the command."""

    runs = 0

    def run(self) -> None:
        FlakyProcessor.runs += 1
        if FlakyProcessor.runs == 1:
            raise KafkaException(KafkaError(KafkaError._TRANSPORT, "Failed to get watermark offsets"))
        signal.getsignal(signal.SIGTERM)(signal.SIGTERM, None)  # as if the operator stopped it

    def signal_shutdown(self) -> None:
        pass


class Factory:
    stats: dict[str, int] = {}


@pytest.fixture(autouse=True)
def _restore_signal_handlers() -> Iterator[None]:
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    FlakyProcessor.runs = 0
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


def test_archiver_restarts_after_a_kafka_error(monkeypatch: pytest.MonkeyPatch) -> None:
    module = "historical.management.commands.run_archiver"
    monkeypatch.setattr(f"{module}.build_archiver", lambda *a, **k: (FlakyProcessor(), Factory()))
    monkeypatch.setattr(f"{module}.time", SimpleNamespace(sleep=lambda _s: None))  # no back-off wait
    call_command("run_archiver")
    assert FlakyProcessor.runs == 2


def test_realtime_worker_restarts_after_a_kafka_error(monkeypatch: pytest.MonkeyPatch) -> None:
    module = "realtime.management.commands.run_realtime"
    monkeypatch.setattr(f"{module}.build_processor", lambda *a, **k: FlakyProcessor())
    monkeypatch.setattr(f"{module}.get_store", lambda: None)
    monkeypatch.setattr(f"{module}.time", SimpleNamespace(sleep=lambda _s: None))  # no back-off wait
    call_command("run_realtime")
    assert FlakyProcessor.runs == 2
