"""A past day imported in two pieces hours apart counts each returning visitor once.

The salt that hashes a day's visitor ids must stay the same for as long as events of that
day may still arrive (the late-event and import window). Between the two imports the salt
store's clock moves two hours on, and Redis is made to drop every salt whose expiry that
clock has passed, as Redis itself would have by then; the rollup of the day then counts
each visitor once.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import uuid
from pathlib import Path

import pymongo
import pytest
import redis
from django.core.management import call_command
from pyspark.sql import SparkSession

import collector.runtime
from collector.ingest import Ingestor
from footfall.config import Config
from footfall.models import Site
from footfall_capture.salts import KEY, SaltStore
from footfall_capture.sink import KafkaSink
from footfall_capture.spool import Spool
from historical.store import DAILY
from tests.integration.batch.test_rollup_e2e import archive_topic
from tests.spark_session import roll_up_in_session

DAY = dt.date.today() - dt.timedelta(days=3)
VISITORS = 12
AGENT = "Mozilla/5.0 (X11; Linux x86_64; rv:{n}.0) Gecko/20100101 Firefox/{n}.0"


def access_log(hour: int) -> str:
    """One page view per visitor at ``hour`` UTC of :data:`DAY`, in combined log format."""
    stamp = dt.datetime.combine(DAY, dt.time(hour), dt.UTC).strftime("%d/%b/%Y:%H:%M:%S +0000")
    return "".join(
        f'81.2.69.{10 + n} - - [{stamp}] "GET /page-{hour} HTTP/1.1" 200 512 "-" "{AGENT.format(n=120 + n)}"\n'
        for n in range(VISITORS)
    )


class Clock:
    def __init__(self) -> None:
        self.now = dt.datetime.now(dt.UTC)

    def __call__(self) -> dt.datetime:
        return self.now


def expire_salts_passed_by(client: redis.Redis, now: dt.datetime) -> None:
    """Delete the day's salt if its expiry lies before ``now``, as Redis would have by then."""
    key = KEY.format(day=DAY.isoformat())
    expire = client.expiretime(key)
    if 0 < expire <= now.timestamp():
        client.delete(key)


@pytest.mark.django_db
def test_a_day_imported_in_two_pieces_counts_each_visitor_once(
    cfg: Config, rt_topic: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spark: SparkSession
) -> None:
    site = f"imp-{uuid.uuid4().hex[:8]}"
    Site.objects.create(site_id=site, name="Imported", domains=["example.com"])
    batch_cfg = dataclasses.replace(
        cfg, events_topic=rt_topic, archive_url=(tmp_path / "archive").as_uri(), mongo_db=f"test_{site}"
    )
    client = redis.Redis.from_url(cfg.redis_url)
    client.delete(KEY.format(day=DAY.isoformat()))  # this day's salt is made by this test
    clock = Clock()

    def import_piece(hour: int) -> None:
        """Import one piece through a fresh collector process (nothing held in memory)."""
        salts = SaltStore(client, dt.timedelta(milliseconds=cfg.ingest_max_age_ms), clock=clock)
        sink = KafkaSink(batch_cfg.kafka, Spool(tmp_path / f"spool-{hour}", 1 << 24))
        monkeypatch.setattr(collector.runtime, "_ingestor", Ingestor(batch_cfg, sink, salts=salts))
        log = tmp_path / f"piece-{hour}.log"
        log.write_text(access_log(hour))
        call_command("import_events", str(log), site=site, format="combined", base_url="https://example.com",
                     no_progress=True)  # fmt: skip

    import_piece(8)
    clock.now += dt.timedelta(hours=2)
    expire_salts_passed_by(client, clock.now)
    import_piece(15)

    archive_topic(batch_cfg, rt_topic, 2 * VISITORS)
    roll_up_in_session(spark, batch_cfg, DAY, DAY, [site])
    mongo: pymongo.MongoClient = pymongo.MongoClient(cfg.mongo_url)
    try:
        daily = mongo[batch_cfg.mongo_db][DAILY].find_one({"_id": f"{site}|{DAY.isoformat()}"})
        assert (daily["pageviews"], daily["visitors"]) == (2 * VISITORS, VISITORS)
    finally:
        mongo.drop_database(batch_cfg.mongo_db)
        mongo.close()
