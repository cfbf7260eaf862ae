"""``manage.py run_realtime``: one realtime worker of the consumer group (run several).

Stops cleanly on SIGTERM/SIGINT (the current batch is written and committed first). If
Redis or Kafka fail, the processor is rebuilt after a back-off; uncommitted work is simply
redelivered, and counted once.
"""

from __future__ import annotations

import redis
from confluent_kafka import KafkaException
from django.core.management.base import BaseCommand, CommandError, CommandParser

from footfall.config import footfall_config
from footfall.supervise import Processor, add_consumer_arguments, consumer_options, run_until_stopped
from footfall_capture.kafka_security import KafkaAuthenticationFailed
from realtime.consumer import BATCH_SIZE, BATCH_TIME_S, RECENT_IDS, build_processor
from realtime.runtime import GROUP, store_for


class Command(BaseCommand):
    help = "Run a realtime worker: consume events and keep the minutely Redis counters."

    def add_arguments(self, parser: CommandParser) -> None:
        add_consumer_arguments(
            parser, group=GROUP, batch_size=BATCH_SIZE, batch_time=BATCH_TIME_S, batch_help="seconds"
        )
        parser.add_argument(
            "--recent-ids",
            type=int,
            default=RECENT_IDS,
            help=f"counted event ids remembered to skip repeats before Redis (default {RECENT_IDS:,}; 0: none)",
        )

    def handle(self, *args: object, **opts: object) -> None:
        cfg = footfall_config()

        def build() -> Processor:
            return build_processor(cfg, store_for(cfg), recent_ids=int(opts["recent_ids"]), **consumer_options(opts))

        retry_on = (redis.RedisError, OSError, KafkaException)
        try:
            run_until_stopped(build, name="realtime worker", retry_on=retry_on, max_backoff_s=30.0)
        except KafkaAuthenticationFailed as exc:  # retrying cannot fix credentials: exit, saying which setting
            raise CommandError(str(exc)) from exc
