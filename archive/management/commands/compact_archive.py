"""``manage.py compact_archive``: merge the small files of archive hours that have ended, now.

The same work as the hourly Celery task ``compact_archive``, under the same archive lock
(:mod:`archive.lock`): a rollup holding it is waited for up to
``--lock-timeout`` seconds, with a line saying whom the command waits for, then the command
gives up with exit status 1.
"""

from __future__ import annotations

import datetime as dt

from django.core.management.base import BaseCommand, CommandError, CommandParser

from archive.compaction import SETTLED_AFTER_S, compact_ended_hours
from archive.management.lock_option import add_lock_timeout, holding_archive_lock
from archive.store import Archive
from footfall.config import footfall_config


class Command(BaseCommand):
    help = "Merge the small files of ended hours of the archive (under the archive lock)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--min-files", type=int, default=8, help="merge an hour only from this many files on")
        parser.add_argument(
            "--settled-after-hours", type=float, default=SETTLED_AFTER_S / 3600, metavar="HOURS",
            help="only hours that ended at least this long ago (default %(default)s)",
        )  # fmt: skip
        add_lock_timeout(parser, "a running rollup")

    def handle(self, *args: object, **opts: object) -> None:
        if int(opts["min_files"]) < 2:
            raise CommandError("--min-files must be at least 2")
        cfg = footfall_config()
        lock_timeout = float(opts["lock_timeout"])
        with holding_archive_lock(cfg.redis_url, "manage.py compact_archive", lock_timeout, self.stdout.write):
            done = compact_ended_hours(
                Archive.from_config(cfg), dt.datetime.now(dt.UTC),
                settled_after_s=float(opts["settled_after_hours"]) * 3600, min_files=int(opts["min_files"]),
            )  # fmt: skip
            self.stdout.write(
                f"merged {done['files_merged']} files in {done['partitions']} hours; "
                f"removed {done['temporary_removed']} stale temporary files"
            )
