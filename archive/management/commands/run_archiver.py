"""``manage.py run_archiver``: archive every raw event to ``ARCHIVE_URL`` (run one or more)."""

from __future__ import annotations

from arroyo.errors import ConsumerError
from confluent_kafka import KafkaException
from django.core.management.base import BaseCommand, CommandError, CommandParser

from archive.archiver import build_archiver
from archive.group import GROUP
from footfall.config import footfall_config
from footfall.supervise import Processor, add_consumer_arguments, consumer_options, run_until_stopped
from footfall_capture.kafka_security import KafkaAuthenticationFailed


class Command(BaseCommand):
    help = "Consume the events topic and write the raw archive (Parquet, partitioned by site/date/hour)."

    def add_arguments(self, parser: CommandParser) -> None:
        add_consumer_arguments(
            parser, group=GROUP, batch_size=50_000, batch_time=10.0, batch_help="seconds a file may collect events"
        )

    def handle(self, *args: object, **opts: object) -> None:
        factory = None  # the current processor's, for its stats at the end

        def build() -> Processor:
            nonlocal factory
            processor, factory = build_archiver(footfall_config(), **consumer_options(opts))
            return processor

        # A full or unreachable archive, or Kafka failing under the consumer (e.g. a broker that
        # goes away while partitions are assigned): retry, the log keeps the data.
        try:
            run_until_stopped(
                build, name="archiver", retry_on=(OSError, KafkaException, ConsumerError), max_backoff_s=60.0
            )
        except KafkaAuthenticationFailed as exc:  # retrying cannot fix credentials: exit, saying which setting
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"archiver stopped: {factory.stats if factory is not None else {}}")
