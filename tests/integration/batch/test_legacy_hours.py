"""``manage.py rollup --legacy-hours`` re-rolls exactly the days whose old hour documents are wrong.

Before hourly buckets were instants, an hour document was keyed ``site|day|HH`` by local
hour, so on a fall-back day both 02:00 hours shared one document. The command finds the
days that still hold such documents and contain a clock change in the site's zone,
re-rolls them from the archive (real Spark, real Mongo-wire server), and leaves old
documents of other days alone, since there each one is exactly one bucket.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
import uuid
from pathlib import Path

import pymongo
import pytest
from django.core.management import call_command
from pyspark.sql import SparkSession

from footfall.config import Config
from footfall.models import Site
from historical.store import HOURLY
from tests.integration.api.test_clock_change_days import archive, day_events
from tests.spark_session import roll_up_in_session

ZONE = "Europe/Berlin"
CHANGE_DAY, PLAIN_DAY = "2026-10-25", "2026-10-24"  # the autumn change (25 buckets), the day before


def legacy(docs: list[dict]) -> list[dict]:
    """``docs`` as the layout before buckets by instant wrote them: one per local hour."""
    by_hour: dict[tuple[str, int], dict] = {}
    for doc in docs:
        key = (doc["day"], doc["hour"])
        old = by_hour.setdefault(
            key,
            {"_id": f"{doc['site_id']}|{doc['day']}|{doc['hour']:02d}", "site_id": doc["site_id"], "day": doc["day"],
             "hour": doc["hour"], "pageviews": 0, "visitors": 0},
        )  # fmt: skip
        old["pageviews"] += doc["pageviews"]
        old["visitors"] += doc["visitors"]  # merged as the old job merged them: wrong on purpose
    return list(by_hour.values())


def rollup(*argv: str) -> str:
    out = io.StringIO()
    call_command("rollup", *argv, "--no-progress", stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_legacy_hours_re_rolls_only_change_days_with_old_documents(
    cfg: Config, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spark: SparkSession
) -> None:
    site = f"legacy-{uuid.uuid4().hex[:8]}"
    Site.objects.create(site_id=site, name="Legacy hours", domains=["example.com"], timezone=ZONE)
    test_cfg = dataclasses.replace(cfg, archive_url=(tmp_path / "archive").as_uri(), mongo_db=f"test_{site}")
    monkeypatch.setattr("historical.management.commands.rollup.footfall_config", lambda: test_cfg)
    archive(test_cfg, day_events(site, ZONE, PLAIN_DAY, seed=1) + day_events(site, ZONE, CHANGE_DAY, seed=2))
    # Today's documents, by the job in this process; the command is the subject further down.
    first, last = dt.date.fromisoformat(PLAIN_DAY), dt.date.fromisoformat(CHANGE_DAY)
    roll_up_in_session(spark, test_cfg, first, last, [site])

    mongo: pymongo.MongoClient = pymongo.MongoClient(cfg.mongo_url)
    hourly = mongo[test_cfg.mongo_db][HOURLY]
    try:
        rolled = {day: sorted(hourly.find({"site_id": site, "day": day}), key=lambda d: d["start_ms"])
                  for day in (PLAIN_DAY, CHANGE_DAY)}  # fmt: skip
        assert [len(rolled[PLAIN_DAY]), len(rolled[CHANGE_DAY])] == [24, 25]
        old = {day: legacy(docs) for day, docs in rolled.items()}
        assert [len(old[PLAIN_DAY]), len(old[CHANGE_DAY])] == [24, 24]  # both 02:00 hours in one
        hourly.delete_many({"site_id": site})
        hourly.insert_many(old[PLAIN_DAY] + old[CHANGE_DAY])

        out = rollup("--legacy-hours", "--site", site)

        assert f"re-rolling {CHANGE_DAY} of {site}" in out
        assert PLAIN_DAY not in out
        assert "re-rolled 1 site-days" in out
        again = sorted(hourly.find({"site_id": site, "day": CHANGE_DAY}), key=lambda d: d["start_ms"])
        assert again == rolled[CHANGE_DAY]  # 25 buckets by instant, exact again
        plain = sorted(hourly.find({"site_id": site, "day": PLAIN_DAY}), key=lambda d: d["_id"])
        assert plain == sorted(old[PLAIN_DAY], key=lambda d: d["_id"])  # left as it was
        assert "re-rolled 0 site-days" in rollup("--legacy-hours", "--site", site)  # nothing left to do
    finally:
        mongo.drop_database(test_cfg.mongo_db)
        mongo.close()
