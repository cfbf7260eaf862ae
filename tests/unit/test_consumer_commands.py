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

from footfall.kafka_client import GroupWatch


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
    module = "archive.management.commands.run_archiver"
    monkeypatch.setattr(f"{module}.build_archiver", lambda *a, **k: (FlakyProcessor(), Factory()))
    monkeypatch.setattr("footfall.supervise.time", SimpleNamespace(sleep=lambda _s: None))  # no back-off wait
    call_command("run_archiver")
    assert FlakyProcessor.runs == 2


def test_realtime_worker_restarts_after_a_kafka_error(monkeypatch: pytest.MonkeyPatch) -> None:
    module = "realtime.management.commands.run_realtime"
    monkeypatch.setattr(f"{module}.build_processor", lambda *a, **k: FlakyProcessor())
    monkeypatch.setattr(f"{module}.store_for", lambda *a, **k: None)
    monkeypatch.setattr("footfall.supervise.time", SimpleNamespace(sleep=lambda _s: None))  # no back-off wait
    call_command("run_realtime")
    assert FlakyProcessor.runs == 2


class StuckOnceProcessor:
    """Its first run ends by itself, as when its GroupWatch finds the consumer stuck outside
    its group; the second run stops the command."""

    runs = 0

    def run(self) -> None:
        StuckOnceProcessor.runs += 1
        if StuckOnceProcessor.runs > 1:
            signal.getsignal(signal.SIGTERM)(signal.SIGTERM, None)

    def signal_shutdown(self) -> None:
        pass


@pytest.mark.parametrize("command", ["run_archiver", "run_realtime"])
def test_a_processor_that_ends_on_its_own_is_built_again_with_a_fresh_watch(
    command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    StuckOnceProcessor.runs = 0
    watches: list[GroupWatch] = []

    def build(*_args: object, watch: GroupWatch, **_kwargs: object) -> object:
        watches.append(watch)
        return (StuckOnceProcessor(), Factory()) if command == "run_archiver" else StuckOnceProcessor()

    if command == "run_archiver":
        monkeypatch.setattr("archive.management.commands.run_archiver.build_archiver", build)
    else:
        monkeypatch.setattr("realtime.management.commands.run_realtime.build_processor", build)
        monkeypatch.setattr("realtime.management.commands.run_realtime.store_for", lambda *a, **k: None)
    call_command(command, "--rejoin-limit-s", "42")
    assert StuckOnceProcessor.runs == 2
    assert len(watches) == 2
    assert watches[0] is not watches[1]
    assert [w.limit_s for w in watches] == [42.0, 42.0]
