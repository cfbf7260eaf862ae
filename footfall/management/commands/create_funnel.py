"""``manage.py create_funnel SITE_ID --name NAME --step GOAL --step GOAL [...] [--window-minutes N]
[--strict]``: define a funnel of a site's goals, by goal name, in order (idempotent: a funnel of
that name is left as it is)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from footfall.models import Funnel, Goal, Site


class Command(BaseCommand):
    help = "Create a funnel: 2 to 8 of the site's goals, reached in order by one visitor."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("site_id")
        parser.add_argument("--name", required=True)
        parser.add_argument("--step", action="append", default=[], help="a goal's name (repeat, in order)")
        parser.add_argument("--window-minutes", type=int, default=0, help="0: within one session (default)")
        parser.add_argument("--strict", action="store_true", help="nothing else between two steps")

    def handle(self, *args: object, **opts: object) -> None:
        site = Site.objects.filter(site_id=opts["site_id"]).first()
        if site is None:
            raise CommandError(f"no site {opts['site_id']!r}: create it with create_site first")
        existing = Funnel.objects.filter(site=site, name=opts["name"]).first()
        if existing is not None:
            self.stdout.write(f"funnel {existing.pk} of {site.site_id}: {existing.name} (exists, unchanged)")
            return
        names = [str(n) for n in opts["step"]]  # type: ignore[attr-defined]
        goals = {g.name: g.pk for g in Goal.objects.filter(site=site, name__in=names)}
        missing = [n for n in names if n not in goals]
        if missing:
            raise CommandError(f"no goal named {', '.join(map(repr, missing))} on {site.site_id}: create_goal first")
        try:
            funnel = Funnel.create(site, str(opts["name"]), [goals[n] for n in names], int(opts["window_minutes"]),
                                   bool(opts["strict"]))  # type: ignore[call-overload]  # fmt: skip
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from None
        self.stdout.write(f"funnel {funnel.pk} of {site.site_id}: {funnel.name}")
