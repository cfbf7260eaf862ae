"""``manage.py send_report <site> --period 2026-W47|2026-11 [--to addr] [--dry-run]``: one report now.

Without ``--to`` the report goes to the site's subscribers of that frequency, recorded and
sent at most once per period and recipient as the scheduled task does (a subscriber who has it
already is skipped). With ``--to`` it goes to the addresses given, unrecorded and without an
unsubscribe link. ``--dry-run`` prints the subject, recipients and text part instead of sending.
The period must have ended, except for a dry run.
"""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.core.validators import validate_email

from alerts.models import Delivery, ReportSubscription
from alerts.periods import parse_period
from alerts.report_delivery import deliver, render_report, send_to_addresses
from alerts.report_mail import Rendered, ReportMailError, message
from footfall.models import Site


class Command(BaseCommand):
    help = "Send, or preview, one site's weekly or monthly email report."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("site", help="the site id")
        parser.add_argument("--period", required=True, help="an ISO week (2026-W47) or a month (2026-11)")
        parser.add_argument(
            "--to", action="append", default=[], metavar="ADDRESS",
            help="send to this address instead of the subscribers (repeatable; no unsubscribe link)",
        )  # fmt: skip
        parser.add_argument("--dry-run", action="store_true", help="print the message instead of sending it")

    def handle(self, *args: object, **opts: object) -> None:
        site = Site.objects.filter(site_id=opts["site"]).first()
        if site is None:
            raise CommandError(f"no site {opts['site']!r} (manage.py create_site makes one)")
        try:
            period = parse_period(str(opts["period"]))
        except ValueError as err:
            raise CommandError(f"--period {err}") from None
        addresses: list[str] = list(opts["to"])
        for address in addresses:
            try:
                validate_email(address)
            except ValidationError:
                raise CommandError(f"--to {address!r} is not an email address") from None
        ended = dt.datetime.now(dt.UTC) >= period.bounds(ZoneInfo(site.timezone))[1]
        if not ended and not opts["dry_run"]:
            raise CommandError(f"{period.key} has not ended yet in {site.timezone}; --dry-run previews it")
        subscribers = [] if addresses else self.subscribers(site, period.frequency, period.key)
        if not addresses and not subscribers:
            raise CommandError(f"{site.site_id} has no {period.frequency} subscriber still owed {period.key}; "
                               "--to sends to an address")  # fmt: skip
        try:
            rendered = render_report(site, period)
            if opts["dry_run"]:
                self.preview(rendered, addresses or [s.email for s in subscribers], subscribers[:1])
            elif addresses:
                send_to_addresses(rendered, addresses)
                self.stdout.write(f"sent {period.key} of {site.site_id} to {', '.join(addresses)}")
            else:
                for sub in subscribers:
                    outcome = deliver(sub, period, rendered) or "skipped (sent or being sent)"
                    self.stdout.write(f"{sub.email}: {outcome}")
        except ReportMailError as err:
            raise CommandError(str(err)) from None

    @staticmethod
    def subscribers(site: Site, frequency: str, key: str) -> list[ReportSubscription]:
        sent = Delivery.objects.filter(period=key, status=Delivery.SENT).values("subscription_id")
        found = ReportSubscription.objects.filter(site=site, frequency=frequency, unsubscribed_at__isnull=True)
        return list(found.exclude(pk__in=sent).select_related("site").order_by("id"))

    def preview(self, rendered: Rendered, recipients: list[str], subscribers: list[ReportSubscription]) -> None:
        """The message as the first recipient would get it: subject, headers and text part."""
        msg = message(rendered, recipients[0], subscribers[0] if subscribers else None)
        self.stdout.write(f"Subject: {msg.subject}")
        self.stdout.write(f"To: {', '.join(recipients)}")
        for name, value in msg.extra_headers.items():
            self.stdout.write(f"{name}: {value}")
        self.stdout.write("(dry run: nothing sent; the HTML part and the chart are not shown)\n")
        self.stdout.write(msg.body)
