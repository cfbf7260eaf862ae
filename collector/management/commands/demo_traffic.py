"""``manage.py demo_traffic``: produce realistic synthetic page views to the events topic.

Runs until interrupted (or ``--count`` events), at ``--rate`` events per second, and
flushes the producer on exit so no acknowledged-to-us event is left in memory.
"""

from __future__ import annotations

import signal
import time
from types import FrameType

from confluent_kafka import KafkaError, Message, Producer
from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from footfall.demo import DemoTraffic
from footfall.events import encode
from footfall.kafka_client import producer_config


class Command(BaseCommand):
    help = "Produce synthetic page views to Kafka (demo traffic)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--rate", type=float, default=20.0, help="events per second (default 20)")
        parser.add_argument("--count", type=int, default=0, help="stop after this many events (0: run forever)")
        parser.add_argument("--site", default="demo", help="site id (default demo)")
        parser.add_argument("--seed", type=int, default=0)

    def handle(self, *args: object, rate: float, count: int, site: str, seed: int, **options: object) -> None:
        if rate <= 0:
            self.stderr.write("--rate must be positive")
            raise SystemExit(2)
        cfg = settings.FOOTFALL
        producer = Producer(producer_config(cfg))
        traffic = DemoTraffic(site_id=site, seed=seed)
        stats = {"sent": 0, "delivered": 0, "failed": 0}
        stopping = False

        def on_delivery(err: KafkaError | None, _msg: Message) -> None:
            stats["failed" if err else "delivered"] += 1

        def on_signal(_signum: int, _frame: FrameType | None) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        interval, next_at, last_report = 1.0 / rate, time.monotonic(), time.monotonic()
        while not stopping and (count == 0 or stats["sent"] < count):
            now_ms = int(time.time() * 1000)
            event = traffic.event(now_ms)
            try:
                producer.produce(cfg.events_topic, encode(event), key=event.visitor_id, on_delivery=on_delivery)
            except BufferError:
                producer.poll(1.0)  # the local queue is full: let deliveries drain, then go on
                continue
            stats["sent"] += 1
            producer.poll(0)
            next_at += interval
            time.sleep(max(0.0, next_at - time.monotonic()))
            if time.monotonic() - last_report >= 10:
                last_report = time.monotonic()
                self.stdout.write(f"demo traffic: {stats}")
        remaining = producer.flush(30)
        self.stdout.write(f"demo traffic stopped: {stats}, {remaining} undelivered")
