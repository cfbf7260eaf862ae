"""``manage.py export_events --site S --from D [--to D] [--format parquet|csv|jsonl] [--output F]``:
the site's raw events over a range, from the archive, as ``GET /api/v1/sites/<site>/export``
gives them (query/raw_export.py): the events the rollup counts, one copy each, oldest first.

``--from``/``--to`` are days (midnight in the site's time zone) or ISO date-times; ``--to`` is
exclusive and defaults to now. Without ``--output`` the file goes to stdout.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from footfall.models import Site
from footfall.vocabulary import QueryError
from query import params as p
from query import raw_export
from query.runtime import get_service


class Command(BaseCommand):
    help = "Export a site's raw events over a range (Parquet, CSV or JSON lines), as the rollup counts them."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--site", required=True)
        parser.add_argument("--from", dest="start", required=True, help="YYYY-MM-DD (midnight, site's zone) or ISO")
        parser.add_argument("--to", dest="end", help="exclusive, same forms; default now")
        parser.add_argument("--format", choices=raw_export.FORMATS, default="parquet")
        parser.add_argument("--output", type=Path, help="the file to write (default: stdout)")

    def handle(self, *args: object, **opts: Any) -> None:
        site = Site.objects.filter(site_id=opts["site"]).first()
        if site is None:
            raise CommandError(f"no site {opts['site']!r}")
        query = {"from": opts["start"], **({"to": opts["end"]} if opts["end"] else {})}
        try:
            rng = p.parse_range(query, site.timezone, get_service().now(), raw_export.DEFAULT_SPAN, raw_export.MAX_SPAN)
        except QueryError as exc:
            raise CommandError(f"--{exc}") from None
        out = opts["output"]
        target = out.open("wb") if out else sys.stdout.buffer
        written = 0
        try:
            for piece in raw_export.pieces(site.site_id, rng, opts["format"]):
                target.write(piece)
                written += len(piece)
        finally:
            if out:
                target.close()
        where = str(out) if out else "stdout"
        self.stderr.write(f"exported {site.site_id} {rng.start.isoformat()} .. {rng.end.isoformat()}: {written:,} bytes"
                          f" of {opts['format']} to {where}")  # fmt: skip
