"""``manage.py tail --site S [--type T] [--path GLOB] [--json]``: a site's events as they reach the log.

Each event prints as a line (``--json``: one JSON object a line) as soon as it is on the log:
time, type, path, referrer, country, device, browser, a custom event's name and props, and the
visitor id cut short. ``--invalid`` tails the events the pipeline refused instead, each with
its reason (``--site`` then narrows them to payloads naming that site). Past ``--max-rate``
events a second it shows 1 in N and says so. It reads from the log's end, through no consumer
group, and leaves nothing in Kafka (realtime/live_tail.py). Ctrl-C stops it.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from footfall.config import footfall_config
from footfall.models import Site
from footfall_capture.events import EVENT_TYPE
from realtime.live_tail import LogTail
from realtime.tail_lines import Sampler, TailFilter, tail_item, text_line


class Command(BaseCommand):
    help = "Print a site's events as they reach the log (or, with --invalid, the refused ones and why)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--site", help="the site whose events to show (required unless --invalid)")
        parser.add_argument("--type", help="only events of this type: pageview, engagement, or a custom event's name")
        parser.add_argument("--path", help="only events on paths matching this glob (* matches anything, / too)")
        parser.add_argument("--json", action="store_true", help="one JSON object a line")
        parser.add_argument("--invalid", action="store_true", help="the refused events, with their reasons")
        parser.add_argument("--max-rate", type=int, default=50, help="events a second shown before sampling (50)")
        parser.add_argument("--count", type=int, default=0, help="stop after this many events shown (0: never)")

    def handle(self, *args: object, **opts: Any) -> None:
        site, kind = opts["site"], opts["type"]
        if not site and not opts["invalid"]:
            raise CommandError("--site is required (or --invalid for the refused events of every site)")
        if site and not Site.objects.filter(site_id=site).exists():
            raise CommandError(f"no site {site!r} (manage.py create_site makes one)")
        if kind is not None and EVENT_TYPE.fullmatch(kind) is None:
            raise CommandError(f"--type {kind!r} is not an event type (letters, digits, '_', '.', ':', '-')")
        if opts["max_rate"] < 1:
            raise CommandError("--max-rate must be at least 1")
        cfg = footfall_config()
        tail = LogTail(cfg, cfg.invalid_topic if opts["invalid"] else cfg.events_topic)
        what = "refused events" if opts["invalid"] else "events"
        self.stderr.write(f"tailing the {what} of {site or 'every site'} from now on (Ctrl-C stops)")
        sys.stderr.flush()
        wanted = TailFilter(site, kind, opts["path"])
        sampler, shown, limit = Sampler(opts["max_rate"]), 0, opts["count"]
        try:
            while not limit or shown < limit:
                for arrival in tail.arrivals():
                    item = tail_item(arrival.value, arrival.headers, arrival.timestamp_ms, opts["invalid"])
                    if item is None or not item.passes(wanted):
                        continue
                    row = item.row
                    show, note = sampler.take(time.monotonic())
                    if note:
                        self.stderr.write(note)
                    if not show:
                        continue
                    self.stdout.write(json.dumps(row) if opts["json"] else text_line(row))
                    self.stdout.flush()
                    shown += 1
                    if limit and shown >= limit:
                        break
        except KeyboardInterrupt:
            pass
        finally:
            tail.close()
