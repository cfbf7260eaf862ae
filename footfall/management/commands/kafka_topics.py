"""``manage.py kafka_topics``: create Footfall's Kafka topics, or check them (``--check``)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from footfall.config import footfall_config
from footfall.kafka_topics import TopicError, admin_client, ensure_topics, wanted_topics


class Command(BaseCommand):
    help = (
        "Create the missing Kafka topics (partitions, replication factor, min.insync.replicas, retention) "
        "and report how existing ones differ from the configuration; exits 1 on any difference."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--check", action="store_true", help="only check: create nothing")

    def handle(self, *args: object, **opts: object) -> None:
        cfg = footfall_config()
        specs = wanted_topics(cfg)
        try:
            report = ensure_topics(admin_client(cfg), specs, create=not opts["check"])
        except TopicError as exc:
            raise CommandError(str(exc)) from exc
        for name in report.created:
            self.stdout.write(f"created {name}")
        problems = [f"{name}: missing" for name in report.missing] + report.differences
        for problem in problems:
            self.stderr.write(problem)
        if problems:
            raise CommandError(f"{len(problems)} difference(s) from the configuration")
        self.stdout.write(f"ok: {', '.join(spec.name for spec in specs)}")
