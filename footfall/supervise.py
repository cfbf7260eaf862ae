"""The restart loop of Footfall's long-running Kafka consumers (``manage.py run_realtime``,
``manage.py run_archiver``): one place for how they stop and how they recover.

Contract of :func:`run_until_stopped`:

* SIGTERM or SIGINT asks the running processor to shut down (arroyo finishes and commits
  its current batch first) and ends the loop once ``run()`` returns.
* A ``run()`` that returns without a signal (its :class:`~footfall.kafka_client.GroupWatch`
  found the consumer stuck outside its group) gets a new processor at once, built by
  ``build`` (so with a fresh consumer and watch).
* A ``run()`` that raises one of ``retry_on`` (Kafka, Redis or the archive failing under
  it) is logged and rebuilt after a back-off of 1 s, doubling up to ``max_backoff_s`` and
  back to 1 s after a run that ends normally. Offsets are committed only after their
  effect is durable, so a rebuilt processor re-reads what was not finished: nothing is lost.
* Any other exception propagates: a bug should stop the process, not spin.
"""

from __future__ import annotations

import argparse
import logging
import signal
import time
from collections.abc import Callable, Mapping
from types import FrameType
from typing import Any, Protocol

from footfall.kafka_client import REJOIN_LIMIT_S, GroupWatch

log = logging.getLogger(__name__)


class Processor(Protocol):
    """What the loop needs of a processor (arroyo's ``StreamProcessor`` has both)."""

    def run(self) -> None: ...

    def signal_shutdown(self) -> None: ...


def run_until_stopped(
    build: Callable[[], Processor],
    *,
    name: str,
    retry_on: tuple[type[BaseException], ...],
    max_backoff_s: float,
) -> None:
    """Build and run processors until the process is told to stop (see the module docstring);
    ``name`` says which consumer failed in the log."""
    stopping = False
    processor: Processor | None = None

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True
        if processor is not None:
            processor.signal_shutdown()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    backoff = 1.0
    while not stopping:
        processor = build()
        try:
            processor.run()
            backoff = 1.0
        except retry_on as exc:
            log.error("%s failed (%s); restarting in %.0fs", name, exc, backoff)
            time.sleep(backoff)
            backoff = min(backoff * 2, max_backoff_s)


def add_consumer_arguments(
    parser: argparse.ArgumentParser, *, group: str, batch_size: int, batch_time: float, batch_help: str
) -> None:
    """The options every consumer command takes (read back by :func:`consumer_options`)."""
    parser.add_argument("--group", default=group, help=f"consumer group (default {group})")
    parser.add_argument("--topic", default=None, help="topic (default: the events topic)")
    parser.add_argument("--batch-size", type=int, default=batch_size)
    parser.add_argument("--batch-time", type=float, default=batch_time, help=batch_help)
    parser.add_argument(
        "--session-timeout-ms", type=int, default=45_000, help="how soon a dead consumer's partitions move (ms)"
    )
    parser.add_argument(
        "--rejoin-limit-s",
        type=float,
        default=REJOIN_LIMIT_S,
        help=f"seconds out of the consumer group before the consumer is rebuilt (default {REJOIN_LIMIT_S:g})",
    )


def consumer_options(opts: Mapping[str, Any]) -> dict[str, Any]:
    """The options of :func:`add_consumer_arguments` as keyword arguments of the processor
    builders (``build_archiver``, ``build_processor``), with a fresh group watch."""
    return {
        "group": str(opts["group"]),
        "topic": opts["topic"] and str(opts["topic"]),
        "max_batch_size": int(opts["batch_size"]),
        "max_batch_time": float(opts["batch_time"]),
        "session_timeout_ms": int(opts["session_timeout_ms"]),
        "watch": GroupWatch(float(opts["rejoin_limit_s"])),
    }
