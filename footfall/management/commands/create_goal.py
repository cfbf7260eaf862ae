"""``manage.py create_goal SITE_ID --name NAME (--page PATTERN | --event NAME [--prop P --value V]
[--revenue-prop P (--currency-prop P | --currency EUR)])``: define a goal of a site (idempotent: a
goal of that name is updated)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from footfall.models import Goal, Site


class Command(BaseCommand):
    help = "Create or update a goal: a page pattern (* wildcards) or a custom event (optionally with a property)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("site_id")
        parser.add_argument("--name", required=True)
        kind = parser.add_mutually_exclusive_group(required=True)
        kind.add_argument("--page", help="a path pattern, e.g. /pricing or /blog/*")
        kind.add_argument("--event", help="a custom event name, e.g. signup")
        parser.add_argument("--prop", default="", help="event goals: a property that must have --value")
        parser.add_argument("--value", default="")
        parser.add_argument("--revenue-prop", default="", help="event goals: the property holding the amount")
        parser.add_argument("--currency-prop", default="", help="with revenue: the property holding the currency")
        parser.add_argument("--currency", default="", help="with revenue, instead: one fixed currency, e.g. EUR")

    def handle(self, *args: object, **opts: object) -> None:
        site = Site.objects.filter(site_id=opts["site_id"]).first()
        if site is None:
            raise CommandError(f"no site {opts['site_id']!r}: create it with create_site first")
        goal = Goal.objects.filter(site=site, name=opts["name"]).first() or Goal(site=site, name=str(opts["name"]))
        goal.kind = "page" if opts["page"] else "event"
        goal.path = str(opts["page"] or "")
        goal.event = str(opts["event"] or "")
        goal.prop, goal.value = str(opts["prop"]), str(opts["value"])
        goal.revenue_prop, goal.currency_prop = str(opts["revenue_prop"]), str(opts["currency_prop"])
        goal.currency = str(opts["currency"])
        try:
            goal.full_clean()
        except ValidationError as exc:
            raise CommandError("; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())) from None
        goal.save()
        self.stdout.write(f"goal {goal.pk} of {site.site_id}: {goal.name}")
