"""``manage.py rollup --date D`` or ``--from D1 --to D2``: exact rollups of local days into MongoDB.

``SPARK_MASTER`` (or ``--master``) picks ``local[*]`` or a cluster. Re-running a day
replaces its documents; a backfill shows a progress bar over its days.
"""

from __future__ import annotations

import datetime as dt
import time

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from collector.runtime import footfall_config
from historical.archiver import GROUP as ARCHIVER_GROUP
from historical.rollups import RollupFailed, run_rollup, site_zones
from realtime.health import consumer_lag


def _date(value: str) -> dt.date:
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise CommandError(f"expected a date as YYYY-MM-DD, got {value!r}") from None


class Command(BaseCommand):
    help = "Roll up archived events of local days into MongoDB (exact, idempotent per day)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--date", help="one local day, YYYY-MM-DD")
        parser.add_argument("--from", dest="first", help="first day of a backfill")
        parser.add_argument("--to", dest="last", help="last day of a backfill (inclusive)")
        parser.add_argument("--site", action="append", default=[], help="only these sites (repeatable)")
        parser.add_argument("--master", help="Spark master (default: SPARK_MASTER)")
        parser.add_argument("--no-progress", action="store_true")
        parser.add_argument(
            "--wait-archived", type=float, default=0, metavar="SECONDS",
            help="first wait up to SECONDS for the archiver to catch up with the events topic",
        )  # fmt: skip

    def handle(self, *args: object, **opts: object) -> None:
        if opts["date"] and (opts["first"] or opts["last"]):
            raise CommandError("give either --date or --from/--to")
        if opts["date"]:
            first = last = _date(str(opts["date"]))
        elif opts["first"] and opts["last"]:
            first, last = _date(str(opts["first"])), _date(str(opts["last"]))
        else:
            raise CommandError("give --date D or --from D1 --to D2")
        if last < first:
            raise CommandError("--to is before --from")
        try:
            zones = site_zones(list(opts["site"]) or None)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if opts["wait_archived"]:
            self._wait_archived(float(opts["wait_archived"]))
        total = ((last - first).days + 1) * len(zones)
        bar = tqdm(total=total, unit="day", disable=bool(opts["no_progress"]), desc="rollup")
        try:
            result = run_rollup(
                footfall_config(), first, last, list(opts["site"]) or None, opts["master"] and str(opts["master"]),
                on_day=lambda site, day: bar.update(1),
            )  # fmt: skip
        except RollupFailed as exc:
            raise CommandError(str(exc)) from None
        finally:
            bar.close()
        self.stdout.write(f"rolled up {len(result.days)} site-days from {result.events} archived events")
        for key, drift in sorted(result.drift.items()):
            self.stdout.write(
                f"  drift {key}: page views realtime={drift['realtime_pageviews']} batch={drift['batch_pageviews']} "
                f"({drift['pageviews_drift_pct']}%), coverage {drift['coverage']:.0%}"
            )

    def _wait_archived(self, seconds: float) -> None:
        """Until the archiver's group has no lag on the events topic (so a rollup right after
        events were sent sees them all), or fail after ``seconds``."""
        cfg = footfall_config()
        deadline = time.monotonic() + seconds
        while True:
            lag = sum(consumer_lag(cfg, ARCHIVER_GROUP, cfg.events_topic).values())
            if lag == 0:
                return
            if time.monotonic() > deadline:
                raise CommandError(f"the archiver is still {lag} events behind after {seconds:.0f}s; is it running?")
            time.sleep(1)
