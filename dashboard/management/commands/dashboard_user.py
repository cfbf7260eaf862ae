"""``manage.py dashboard_user NAME --site SITE [--password-file FILE] [--staff]``: a dashboard login.

Creates the user if needed and grants it the sites. With ``--password-file``, the password
is read from that file, or generated and written there (mode 600) when the file is missing
or empty, so a script can print the login without ever passing a password on a command line.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from dashboard.models import SiteAccess
from footfall.models import Site


class Command(BaseCommand):
    help = "Create or update a dashboard user and grant it sites."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--site", action="append", default=[], help="grant this site (repeatable)")
        parser.add_argument("--password-file", help="read the password from here, or generate and store it")
        parser.add_argument("--staff", action="store_true", help="staff users see every site")

    def handle(self, *args: object, **opts: object) -> None:
        sites = list(Site.objects.filter(site_id__in=opts["site"]))
        missing = set(opts["site"]) - {s.site_id for s in sites}  # type: ignore[arg-type]
        if missing:
            raise CommandError(f"no site {', '.join(sorted(missing))}; create it with `manage.py create_site`")
        user, created = get_user_model().objects.get_or_create(username=opts["username"])
        if opts["password_file"]:
            user.set_password(_password(Path(str(opts["password_file"]))))
        elif created:
            user.set_unusable_password()
        if opts["staff"]:
            user.is_staff = True
        user.save()
        for site in sites:
            SiteAccess.objects.get_or_create(user=user, site=site)
        granted = ", ".join(a.site_id for a in SiteAccess.objects.filter(user=user)) or "none"
        self.stdout.write(f"{'created' if created else 'updated'} {user.get_username()} (sites: {granted})")


def _password(path: Path) -> str:
    if path.is_file() and path.read_text().strip():
        return path.read_text().strip()
    password = secrets.token_urlsafe(12)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(password + "\n")
    return password
