"""``manage.py rebuild_realtime --site S --from ISO --to ISO [--reset]``: replay from Kafka."""

from __future__ import annotations

import datetime as dt
import time

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from footfall.config import footfall_config
from realtime.rebuild import rebuild
from realtime.runtime import store_for


def _ms(value: str, name: str) -> int:
    try:
        moment = dt.datetime.fromisoformat(value)
    except ValueError:
        raise CommandError(f"--{name}: expected an ISO 8601 time such as 2026-11-21T10:00Z, got {value!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return int(moment.timestamp() * 1000)


class Command(BaseCommand):
    help = "Rebuild realtime counters of a site and time range from the Kafka log."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--site", required=True)
        parser.add_argument("--from", dest="start", help="ISO time (default: the retention window's start)")
        parser.add_argument("--to", dest="end", help="ISO time (default: now)")
        # Every rebuild clears its range first now (see realtime.rebuild); kept so scripts that pass it still run.
        parser.add_argument("--reset", action="store_true", help="accepted for compatibility: every rebuild resets")
        parser.add_argument("--topic", default=None)
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args: object, **opts: object) -> None:
        store = store_for(footfall_config())
        now = int(time.time() * 1000)
        start = _ms(str(opts["start"]), "from") if opts["start"] else now - store.layout.retention_s * 1000
        end = _ms(str(opts["end"]), "to") if opts["end"] else now + 60_000
        bar = tqdm(unit="msg", disable=bool(opts["no_progress"]), desc="replaying")
        try:
            counts = rebuild(
                footfall_config(), store, str(opts["site"]), start, end, now,
                topic=opts["topic"] and str(opts["topic"]), progress=bar.update,
            )  # fmt: skip
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        finally:
            bar.close()
        self.stdout.write(", ".join(f"{k}={v}" for k, v in counts.items()))
