"""``manage.py realtime_stats``: consumer lag, events/s, dedup hits and invalid counts.

Prints them (``--json`` for machines) and records them in Redis for the dashboard's health
panel; ``--watch N`` repeats every N seconds.
"""

from __future__ import annotations

import json
import time

from django.core.management.base import BaseCommand, CommandParser

from footfall.config import footfall_config
from realtime.health import realtime_health, record
from realtime.runtime import GROUP, get_store


class Command(BaseCommand):
    help = "Show (and record) the realtime layer's lag, throughput, duplicates and invalid events."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--group", default=GROUP)
        parser.add_argument("--json", action="store_true")
        parser.add_argument("--watch", type=float, default=0.0, help="repeat every N seconds")

    def handle(self, *args: object, **opts: object) -> None:
        while True:
            health = realtime_health(footfall_config(), get_store(), str(opts["group"]))
            record(get_store(), health)
            if opts["json"]:
                self.stdout.write(json.dumps(health))
            else:
                stats = health["stats"]
                self.stdout.write(
                    f"lag={health['lag_total']} events/s={health['events_per_s']} "
                    f"workers={health['workers_alive']} counted={stats.get('events', 0)} "
                    f"duplicates={stats.get('duplicates', 0)} invalid={stats.get('invalid', 0)} "
                    f"late={stats.get('late', 0)}"
                )
            if not opts["watch"]:
                return
            time.sleep(float(opts["watch"]))
