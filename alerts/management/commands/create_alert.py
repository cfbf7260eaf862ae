"""``manage.py create_alert SITE_ID --name NAME --kind KIND --threshold X [--window MIN]
[--scope page|ref [--value V]] [--goal NAME] [--max-per-day N] [--email ADDR ...] [--report weekly|monthly]``:
define an alert rule of a site, delivering to email channels (idempotent: a rule of that name is
updated, a channel of that address reused, a report subscription kept)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from alerts.models import EMAIL, RULE_KINDS, THRESHOLD_MEANING, AlertRule, Channel, ReportSubscription
from footfall.models import Goal, Site


def _messages(exc: ValidationError) -> str:
    return "; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())


class Command(BaseCommand):
    help = "Create or update an alert rule of a site, with email channels and, optionally, report subscriptions."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("site_id")
        parser.add_argument("--name", required=True)
        parser.add_argument("--kind", required=True, choices=[k for k, _ in RULE_KINDS])
        meanings = "; ".join(f"{k}: {v}" for k, v in THRESHOLD_MEANING.items())
        parser.add_argument("--threshold", required=True, type=float, help=meanings)
        parser.add_argument("--window", type=int, default=60, help="minutes (spike, drop, goal rules)")
        parser.add_argument("--scope", default="", choices=["", "page", "ref"], help="spike rules")
        parser.add_argument("--value", default="", help="spike rules: one page path or referrer domain")
        parser.add_argument("--goal", default="", help="goal rules: the goal's name")
        parser.add_argument("--max-per-day", type=int, default=3)
        parser.add_argument("--email", action="append", default=[], help="a recipient (repeatable)")
        parser.add_argument(
            "--report", action="append", default=[], choices=["weekly", "monthly"],
            help="also subscribe each --email to this report (repeatable)",
        )  # fmt: skip

    @transaction.atomic
    def handle(self, *args: object, **opts: object) -> None:
        site = Site.objects.filter(site_id=opts["site_id"]).first()
        if site is None:
            raise CommandError(f"no site {opts['site_id']!r}: create it with create_site first")
        goal = None
        if opts["goal"]:
            goal = Goal.objects.filter(site=site, name=opts["goal"]).first()
            if goal is None:
                raise CommandError(f"no goal {opts['goal']!r} of {site.site_id}: create it with create_goal first")
        rule = AlertRule.objects.filter(site=site, name=opts["name"]).first() or AlertRule(site=site, name=opts["name"])
        rule.kind, rule.threshold, rule.window_minutes = opts["kind"], opts["threshold"], opts["window"]
        rule.scope, rule.value, rule.goal, rule.max_per_day = opts["scope"], opts["value"], goal, opts["max_per_day"]
        channels = []
        try:
            rule.full_clean()
            rule.save()
            for address in opts["email"]:  # type: ignore[attr-defined]
                channel = Channel.objects.filter(site=site, kind=EMAIL, email=address).first() or Channel(
                    site=site, name=f"email {address}"[:100], kind=EMAIL, email=address
                )
                channel.full_clean()
                channel.save()
                channels.append(channel)
                for frequency in opts["report"]:  # type: ignore[attr-defined]
                    subscription = ReportSubscription(site=site, email=address, frequency=frequency)
                    if not ReportSubscription.objects.filter(site=site, email=address, frequency=frequency).exists():
                        subscription.full_clean()
                        subscription.save()
        except ValidationError as exc:
            raise CommandError(_messages(exc)) from None
        rule.channels.add(*channels)
        self.stdout.write(f"alert rule {rule.pk} of {site.site_id}: {rule.name} ({rule.kind})")
