"""``manage.py redis_host_user``: a Redis user for a host site that may only read the daily salts."""

from __future__ import annotations

import redis
from django.core.management.base import BaseCommand, CommandError, CommandParser

from footfall.config import footfall_config
from footfall.management.host_user_arguments import add_host_user_arguments, read_password_file
from footfall.redis_host_user import RULES, HostUserError, create_host_user, persist, remove_host_user


class Command(BaseCommand):
    help = (
        "Create a Redis ACL user for a host site's middleware that may read the daily salts and nothing "
        "else (docs/security.md), or --remove one. Runs with the server's Redis URL (FOOTFALL_REDIS_URL)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_host_user_arguments(parser, "the user")

    def handle(self, *args: object, **opts: object) -> None:
        client = redis.Redis.from_url(footfall_config().redis_url, socket_timeout=10)
        user = str(opts["user"])
        try:
            if opts["remove"]:
                existed = remove_host_user(client, user)
                self.stdout.write(f"removed {user}" if existed else f"no user {user}: nothing to remove")
            else:
                password = read_password_file(opts["password_file"])  # type: ignore[arg-type]
                create_host_user(client, user, password)
                self.stdout.write(f"{user} may read the daily salts and nothing else: {' '.join(RULES)}")
            saved = persist(client)
        except HostUserError as exc:
            raise CommandError(f"{user}: {exc}") from exc
        if not saved:
            self.stderr.write(
                "Redis has no ACL file (aclfile): this lasts until Redis restarts. Keep it with an aclfile, "
                f"or in redis.conf: user {user} on #<sha256 of the password> {' '.join(RULES[1:])}"
            )
