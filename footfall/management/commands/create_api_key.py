"""``manage.py create_api_key SITE_ID --scope read --scope ingest [--expires-in-days N]``: issue a
key, shown once; without ``--expires-in-days`` it works until it is revoked."""

from __future__ import annotations

from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from footfall.models import SCOPES, ApiKey, Site


class Command(BaseCommand):
    help = "Issue an API key for a site. The key is printed once; only its hash is stored."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("site_id")
        parser.add_argument("--name", default="default")
        parser.add_argument("--scope", action="append", choices=SCOPES, default=[])
        parser.add_argument("--expires-in-days", type=int, help="days until the key stops working (default: never)")
        parser.add_argument("--revoke", metavar="PREFIX", help="revoke the key with this prefix instead")

    def handle(self, *args: object, **opts: object) -> None:
        site = Site.objects.filter(site_id=opts["site_id"]).first()
        if site is None:
            raise CommandError(f"no site {opts['site_id']!r}; create it with `manage.py create_site`")
        if opts["revoke"]:
            key = ApiKey.objects.filter(site=site, prefix=opts["revoke"], revoked_at__isnull=True).first()
            if key is None:
                raise CommandError(f"no live key with prefix {opts['revoke']!r} for {site.site_id}")
            key.revoke()
            self.stdout.write(f"revoked {key}")
            return
        days = opts["expires_in_days"]
        if isinstance(days, int) and days < 1:
            raise CommandError(f"--expires-in-days must be at least 1, got {days}")
        expires_at = timezone.now() + timedelta(days=days) if isinstance(days, int) else None
        _, plaintext = ApiKey.issue(site, str(opts["name"]), list(opts["scope"]) or ["read"], expires_at=expires_at)
        self.stdout.write(plaintext)
