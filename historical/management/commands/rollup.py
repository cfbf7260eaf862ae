"""``manage.py rollup --date D`` or ``--from D1 --to D2``: exact rollups of local days into MongoDB.

``SPARK_MASTER`` (or ``--master``) picks ``local[*]`` or a cluster. Re-running a day
replaces its documents; a backfill shows a progress bar over its days.

``manage.py rollup --legacy-hours`` re-rolls the days rolled up before hourly buckets were
instants that contain a clock change (there an old ``site|day|HH`` document holds both
repeated hours); old documents of other days are exact and read as they are.

Every form holds the archive lock (:mod:`archive.lock`) for its whole run, as the
Celery tasks do: if a compaction or another rollup holds it, the command waits up to
``--lock-timeout`` seconds, saying whom it waits for, then gives up with exit status 1.
"""

from __future__ import annotations

import datetime as dt
import time
from contextlib import AbstractContextManager

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from archive.group import GROUP as ARCHIVER_GROUP
from archive.management.lock_option import add_lock_timeout, holding_archive_lock
from footfall.config import footfall_config
from footfall_capture.kafka import client_config
from historical.rollups import RollupFailed, legacy_change_days, run_rollup, site_zones

RETRY_COMMITTED = {KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS}


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
            "--legacy-hours", action="store_true",
            help="re-roll the days with a clock change whose hour documents predate buckets by instant",
        )  # fmt: skip
        parser.add_argument(
            "--wait-archived", type=float, default=0, metavar="SECONDS",
            help="first wait up to SECONDS for the archiver to catch up with the events topic",
        )  # fmt: skip
        add_lock_timeout(parser, "a running rollup or compaction")

    def handle(self, *args: object, **opts: object) -> None:
        if opts["legacy_hours"]:
            if opts["date"] or opts["first"] or opts["last"]:
                raise CommandError("--legacy-hours takes no days: it finds them")
            with self._archive_lock("manage.py rollup --legacy-hours", float(opts["lock_timeout"])):
                self._legacy_hours(list(opts["site"]) or None, opts["master"] and str(opts["master"]))
            return
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
        with self._archive_lock(f"manage.py rollup {first}..{last}", float(opts["lock_timeout"])):
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
                    f"  drift {key}: page views realtime={drift['realtime_pageviews']} "
                    f"batch={drift['batch_pageviews']} ({drift['pageviews_drift_pct']}%), "
                    f"coverage {drift['coverage']:.0%}"
                )

    def _archive_lock(self, what: str, timeout_s: float) -> AbstractContextManager[None]:
        return holding_archive_lock(footfall_config().redis_url, what, timeout_s, self.stdout.write)

    def _legacy_hours(self, sites: list[str] | None, master: str | None) -> None:
        try:
            days = legacy_change_days(footfall_config(), sites)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        for day, day_sites in days.items():
            self.stdout.write(f"re-rolling {day} of {', '.join(day_sites)}")
            date = dt.date.fromisoformat(day)
            try:
                run_rollup(footfall_config(), date, date, day_sites, master)
            except RollupFailed as exc:
                raise CommandError(str(exc)) from None
        self.stdout.write(f"re-rolled {sum(len(s) for s in days.values())} site-days with old hour documents")

    def _wait_archived(self, seconds: float) -> None:
        """Until the archiver's group has committed past every event on the events topic when
        the wait began (so a rollup right after a backfill sees it all, while live traffic
        keeps flowing), or fail after ``seconds``."""
        cfg = footfall_config()
        consumer = Consumer(client_config(cfg.kafka, **{"group.id": ARCHIVER_GROUP}))
        try:
            topic = cfg.events_topic
            partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
            tps = [TopicPartition(topic, p) for p in partitions]
            target = {tp.partition: consumer.get_watermark_offsets(tp, timeout=10)[1] for tp in tps}
            deadline = time.monotonic() + seconds
            while True:
                try:
                    done = {tp.partition: tp.offset for tp in consumer.committed(tps, timeout=10)}
                except KafkaException as exc:
                    # A broker that has just started answers "not coordinator" (or "loading")
                    # until it has found the group's coordinator: ask again within the wait.
                    if exc.args[0].code() not in RETRY_COMMITTED:
                        raise
                    done = {tp.partition: -1 for tp in tps}
                behind = sum(max(0, end - max(done[p], 0)) for p, end in target.items())
                if behind == 0:
                    return
                if time.monotonic() > deadline:
                    raise CommandError(
                        f"the archiver is still {behind} events behind after {seconds:.0f}s; is it running?"
                    )
                time.sleep(1)
        finally:
            consumer.close()
