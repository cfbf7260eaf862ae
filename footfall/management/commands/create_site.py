"""``manage.py create_site SITE_ID --domain example.com [...]``: register a site (idempotent)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from footfall.models import Site
from footfall_capture.salt_days import SALT_POLICIES


class Command(BaseCommand):
    help = "Create or update a site that may send events."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("site_id")
        parser.add_argument("--name", default="")
        parser.add_argument("--domain", action="append", default=[], help="host name (repeatable)")
        parser.add_argument("--origin", action="append", default=[], help="allowed beacon origin (repeatable)")
        parser.add_argument("--timezone", default="UTC")
        parser.add_argument("--salt-policy", choices=SALT_POLICIES, default="daily")
        parser.add_argument("--ignore-dnt", action="store_true", help="record visitors who send DNT/GPC")
        parser.add_argument("--drop-bots", action="store_true", help="drop crawler traffic instead of flagging it")
        parser.add_argument("--keep-param", action="append", default=[], metavar="NAME",
                            help="query parameter kept in page URLs besides ref and source (repeatable)")  # fmt: skip
        parser.add_argument("--imports-win", action="store_true",
                            help="on days both hold, answer from imported history, not the own rollup")  # fmt: skip

    def handle(self, *args: object, **opts: object) -> None:
        site = Site.objects.filter(site_id=opts["site_id"]).first() or Site(site_id=opts["site_id"])
        site.name = str(opts["name"] or site.name or opts["site_id"])
        site.domains = list(opts["domain"]) or site.domains
        site.allowed_origins = list(opts["origin"]) or site.allowed_origins
        site.timezone = str(opts["timezone"])
        site.salt_policy = str(opts["salt_policy"])
        site.respect_dnt = not opts["ignore_dnt"]
        site.drop_bots = bool(opts["drop_bots"])
        site.query_params = list(opts["keep_param"]) or site.query_params
        site.imports_win = bool(opts["imports_win"])
        try:
            site.full_clean()
        except ValidationError as exc:
            raise CommandError("; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())) from None
        site.save()
        self.stdout.write(
            f"site {site.site_id}: domains={site.domains} origins={sorted(site.origins())} tz={site.timezone}"
            + (f" keeps ?{'&'.join(site.query_params)}" if site.query_params else "")
            + (" imports win" if site.imports_win else "")
        )
