"""``manage.py kafka_host_user``: a Kafka user for a host site that may only write events."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from footfall.config import footfall_config
from footfall.kafka_host_user import HostUserError, create_host_user, remove_host_user
from footfall.kafka_topics import admin_client
from footfall.management.host_user_arguments import add_host_user_arguments, read_password_file


class Command(BaseCommand):
    help = (
        "Create a SCRAM-SHA-512 Kafka user for a host site's middleware, allowed to write to the events "
        "topic and nothing else (the brokers must run an authorizer; docs/security.md), or --remove one. "
        "Runs with the server's Kafka credentials."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_host_user_arguments(parser, "the user's ACLs and credential")

    def handle(self, *args: object, **opts: object) -> None:
        cfg = footfall_config()
        admin = admin_client(cfg)
        user = str(opts["user"])
        try:
            if opts["remove"]:
                count = remove_host_user(admin, user)
                self.stdout.write(f"removed {user}: its credential and {count} ACL(s)")
                return
            password = read_password_file(opts["password_file"])  # type: ignore[arg-type]
            create_host_user(admin, user, password, cfg.events_topic)
        except HostUserError as exc:
            raise CommandError(f"{user}: {exc}") from exc
        self.stdout.write(f"{user} may write to {cfg.events_topic} and nothing else (SCRAM-SHA-512)")
