"""footfall.supervise: the consumers' restart loop backs off, resets, stops on a signal and
lets bugs through."""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from types import SimpleNamespace

import pytest

from footfall import supervise


class Scripted:
    """A processor whose runs follow a script: an exception class to raise, "end" to return
    on its own, or "stop" to deliver SIGTERM to the loop as an operator would."""

    def __init__(self, script: list[object], log: list[str]) -> None:
        self.script, self.log = script, log

    def run(self) -> None:
        step = self.script.pop(0)
        self.log.append(step if isinstance(step, str) else step.__name__)  # type: ignore[union-attr]
        if step == "stop":
            signal.getsignal(signal.SIGTERM)(signal.SIGTERM, None)
        elif isinstance(step, type):
            raise step("broker gone")

    def signal_shutdown(self) -> None:
        self.log.append("shutdown asked")


@pytest.fixture(autouse=True)
def _restore_signal_handlers() -> Iterator[None]:
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    waited: list[float] = []
    monkeypatch.setattr(supervise, "time", SimpleNamespace(sleep=waited.append))
    return waited


def builder(script: list[object], log: list[str]) -> Callable[[], Scripted]:
    def build() -> Scripted:
        log.append("built")
        return Scripted(script, log)

    return build


def test_failures_back_off_doubling_to_the_cap_and_a_normal_end_resets_it(sleeps: list[float]) -> None:
    log: list[str] = []
    script: list[object] = [OSError, OSError, OSError, OSError, "end", OSError, "stop"]
    supervise.run_until_stopped(builder(script, log), name="test", retry_on=(OSError,), max_backoff_s=3.0)
    assert sleeps == [1.0, 2.0, 3.0, 3.0, 1.0]
    assert log.count("built") == 7  # one processor per run, including after a run that ended by itself
    assert log[-2:] == ["stop", "shutdown asked"]  # the signal reached the running processor
    assert script == []


def test_an_exception_it_was_not_told_to_retry_propagates(sleeps: list[float]) -> None:
    log: list[str] = []
    with pytest.raises(ValueError, match="broker gone"):
        supervise.run_until_stopped(
            builder([OSError, ValueError, "stop"], log), name="test", retry_on=(OSError,), max_backoff_s=30.0
        )
    assert sleeps == [1.0]
    assert log == ["built", "OSError", "built", "ValueError"]
