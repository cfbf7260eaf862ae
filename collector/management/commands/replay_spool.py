"""``manage.py replay_spool``: move events spooled during a Kafka outage to Kafka now.

Collector processes replay on their own once Kafka is back; this command is for a spool
left behind by processes that are gone, or to drain it before maintenance. Replayed events
keep their original ``event_id``.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from collector.runtime import get_sink
from footfall.config import footfall_config


class Command(BaseCommand):
    help = "Replay spooled events to Kafka and report how many were delivered."

    def handle(self, *args: object, **opts: object) -> None:
        sink = get_sink(footfall_config())
        before = sink.spool.pending()
        delivered = sink.replay()
        after = sink.spool.pending()
        self.stdout.write(f"spool {sink.spool.directory}: {before} pending, {delivered} delivered, {after} left")
        sink.close()
        if after:
            raise CommandError(f"{after} events are still spooled (Kafka unreachable?); run again later")
