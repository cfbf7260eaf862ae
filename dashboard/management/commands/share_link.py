"""``manage.py share_link SITE_ID [--label L] [--expires-in-days N | --no-expiry]``: a public
read-only link to a site, shown once; it expires after 30 days unless told otherwise.

``--list`` shows the site's links, ``--revoke PREFIX`` revokes one (at once: the next
refresh of an open page shows nothing more).
"""

from __future__ import annotations

from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError, CommandParser

from dashboard.models import DEFAULT_LIFETIME, ShareLink
from footfall.models import Site


class Command(BaseCommand):
    help = "Create, list or revoke public read-only share links of a site's dashboard."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("site_id")
        parser.add_argument("--label", default="")
        parser.add_argument("--base-url", default="", help="prefix of the printed link, e.g. https://stats.example.com")
        parser.add_argument(
            "--expires-in-days", type=int, default=DEFAULT_LIFETIME.days, help="days until the link stops working"
        )
        parser.add_argument("--no-expiry", action="store_true", help="the link works until it is revoked")
        parser.add_argument("--list", action="store_true")
        parser.add_argument("--revoke", metavar="PREFIX")

    def handle(self, *args: object, **opts: object) -> None:
        site = Site.objects.filter(site_id=opts["site_id"]).first()
        if site is None:
            raise CommandError(f"no site {opts['site_id']!r}; create it with `manage.py create_site`")
        if opts["list"]:
            for link in ShareLink.objects.filter(site=site).order_by("created_at"):
                self.stdout.write(str(link))
            return
        if opts["revoke"]:
            link = ShareLink.objects.filter(site=site, prefix=opts["revoke"], revoked_at__isnull=True).first()
            if link is None:
                raise CommandError(f"no live share link with prefix {opts['revoke']!r} for {site.site_id}")
            link.revoke()
            self.stdout.write(f"revoked {link}")
            return
        days = opts["expires_in_days"]
        if not isinstance(days, int) or days < 1:
            raise CommandError(
                f"--expires-in-days must be at least 1, got {days}; --no-expiry for a link that never expires"
            )
        lifetime = None if opts["no_expiry"] else timedelta(days=days)
        _, token = ShareLink.issue(site, str(opts["label"]), lifetime=lifetime)
        self.stdout.write(f"{str(opts['base_url']).rstrip('/')}/dashboard/share/{token}")
