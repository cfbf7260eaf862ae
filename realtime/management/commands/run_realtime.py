"""``manage.py run_realtime``: one realtime worker of the consumer group (run several).

Stops cleanly on SIGTERM/SIGINT (the current batch is written and committed first). If
Redis or Kafka fail, the processor is rebuilt after a back-off; uncommitted work is simply
redelivered, and counted once.
"""

from __future__ import annotations

import redis
from arroyo.errors import ConsumerError
from confluent_kafka import KafkaException
from django.core.management.base import BaseCommand, CommandParser

from footfall.config import footfall_config
from footfall.kafka_client import REJOIN_LIMIT_S, GroupWatch
from footfall.supervise import Processor, run_until_stopped
from realtime.consumer import RECENT_IDS, build_processor
from realtime.runtime import GROUP, get_store


class Command(BaseCommand):
    help = "Run a realtime worker: consume events and keep the minutely Redis counters."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--group", default=GROUP, help=f"consumer group (default {GROUP})")
        parser.add_argument("--topic", default=None, help="topic (default: the events topic)")
        parser.add_argument("--batch-size", type=int, default=5000)
        parser.add_argument("--batch-time", type=float, default=0.5, help="seconds")
        parser.add_argument(
            "--session-timeout-ms", type=int, default=45_000, help="how soon a dead worker's partitions move (ms)"
        )
        parser.add_argument(
            "--rejoin-limit-s",
            type=float,
            default=REJOIN_LIMIT_S,
            help=f"seconds out of the consumer group before the consumer is rebuilt (default {REJOIN_LIMIT_S:g})",
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
            return build_processor(
                cfg,
                get_store(),
                str(opts["group"]),
                opts["topic"] and str(opts["topic"]),
                int(opts["batch_size"]),
                float(opts["batch_time"]),
                int(opts["session_timeout_ms"]),
                int(opts["recent_ids"]),
                GroupWatch(float(opts["rejoin_limit_s"])),
            )

        retry_on = (redis.RedisError, OSError, KafkaException, ConsumerError)
        run_until_stopped(build, name="realtime worker", retry_on=retry_on, max_backoff_s=30.0)
