"""``manage.py run_archiver``: archive every raw event to ``ARCHIVE_URL`` (run one or more)."""

from __future__ import annotations

from arroyo.errors import ConsumerError
from confluent_kafka import KafkaException
from django.core.management.base import BaseCommand, CommandParser

from footfall.config import footfall_config
from footfall.kafka_client import REJOIN_LIMIT_S, GroupWatch
from footfall.supervise import Processor, run_until_stopped
from historical.archiver import GROUP, build_archiver


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
        factory = None  # the current processor's, for its stats at the end

        def build() -> Processor:
            nonlocal factory
            processor, factory = build_archiver(
                footfall_config(),
                str(opts["group"]),
                opts["topic"] and str(opts["topic"]),
                int(opts["batch_size"]),
                float(opts["batch_time"]),
                int(opts["session_timeout_ms"]),
                GroupWatch(float(opts["rejoin_limit_s"])),
            )
            return processor

        # A full or unreachable archive, or Kafka failing under the consumer (e.g. a broker that
        # goes away while partitions are assigned): retry, the log keeps the data.
        run_until_stopped(build, name="archiver", retry_on=(OSError, KafkaException, ConsumerError), max_backoff_s=60.0)
        self.stdout.write(f"archiver stopped: {factory.stats if factory is not None else {}}")
