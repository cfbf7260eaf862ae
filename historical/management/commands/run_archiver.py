"""``manage.py run_archiver``: archive every raw event to ``ARCHIVE_URL`` (run one or more)."""

from __future__ import annotations

import logging
import signal
import time
from types import FrameType

from arroyo.errors import ConsumerError
from confluent_kafka import KafkaException
from django.core.management.base import BaseCommand, CommandParser

from collector.runtime import footfall_config
from footfall.kafka_client import REJOIN_LIMIT_S, GroupWatch
from historical.archiver import GROUP, build_archiver

log = logging.getLogger(__name__)


class Command(BaseCommand):
    help = "Consume the events topic and write the raw archive (Parquet, partitioned by site/date/hour)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--group", default=GROUP)
        parser.add_argument("--topic", default=None)
        parser.add_argument("--batch-size", type=int, default=50_000)
        parser.add_argument("--batch-time", type=float, default=10.0, help="seconds a file may collect events")
        parser.add_argument("--session-timeout-ms", type=int, default=45_000)
        parser.add_argument(
            "--rejoin-limit-s",
            type=float,
            default=REJOIN_LIMIT_S,
            help=f"seconds out of the consumer group before the consumer is rebuilt (default {REJOIN_LIMIT_S:g})",
        )

    def handle(self, *args: object, **opts: object) -> None:
        stopping = False
        processor = None

        def on_signal(_signum: int, _frame: FrameType | None) -> None:
            nonlocal stopping
            stopping = True
            if processor is not None:
                processor.signal_shutdown()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        backoff = 1.0
        while not stopping:
            processor, factory = build_archiver(
                footfall_config(),
                str(opts["group"]),
                opts["topic"] and str(opts["topic"]),
                int(opts["batch_size"]),
                float(opts["batch_time"]),
                int(opts["session_timeout_ms"]),
                GroupWatch(float(opts["rejoin_limit_s"])),
            )
            try:
                processor.run()
                backoff = 1.0
            # A full or unreachable archive, or Kafka failing under the consumer (e.g. a broker that
            # goes away while partitions are assigned): retry, the log keeps the data.
            except (OSError, KafkaException, ConsumerError) as exc:
                log.error("archiver failed (%s); restarting in %.0fs", exc, backoff)
                time.sleep(backoff)
                backoff = min(backoff * 2, 60.0)
        self.stdout.write(f"archiver stopped: {factory.stats}")
