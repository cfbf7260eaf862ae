"""``manage.py check_site S``: is the site's snippet working? The dashboard's site page, as text.

Prints the first and the last event the collector took for the site (when, from which source:
tracker, pixel, batch API or middleware, and on which page host), its last refused events with
their reasons and what to do, and the snippets to install. Exits 0 once an event was seen, 1
while there is none yet, 2 when the record cannot be read: a script can wait on it.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from footfall.config import footfall_config
from footfall.models import Site
from query.installation import installation, report

PLACEHOLDER_URL = "https://stats.example.com"


class Command(BaseCommand):
    help = "Show whether a site's events arrive: first and last event, refusals and why, and its snippet."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("site_id")
        parser.add_argument("--url", help="the server's base URL as visitors reach it (default: FOOTFALL_PUBLIC_URL)")

    def handle(self, *args: object, **opts: Any) -> None:
        site_id = opts["site_id"]
        if not Site.objects.filter(site_id=site_id).exists():
            raise CommandError(f"no site {site_id!r} (manage.py create_site makes one)")
        base_url = (opts["url"] or footfall_config().public_url or PLACEHOLDER_URL).rstrip("/")
        check = installation(site_id, base_url)
        self.stdout.write("\n".join(report(check, int(time.time() * 1000))))
        if base_url == PLACEHOLDER_URL:
            self.stderr.write("(FOOTFALL_PUBLIC_URL is not set: replace stats.example.com, or pass --url)")
        self.stdout.flush()
        if check.unreadable:
            sys.exit(2)
        if not check.receiving:
            sys.exit(1)
