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

import logging
import signal
import time
from collections.abc import Callable
from types import FrameType
from typing import Protocol

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
