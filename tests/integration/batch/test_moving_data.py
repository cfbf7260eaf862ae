"""Data out and back in, through the real pipeline: export → import → Kafka → archive → rollup.

* Round trip: two days of site A's traffic (duplicates, bots, custom events, engagement, late
  events) rolled up; A exported as Parquet into site B and as CSV into site C
  (``manage.py export_events``, ``import_events --format footfall --from-site A``); after the
  rollup, B's and C's documents, which every settled endpoint reads (time series, breakdowns,
  goals, funnels, engagement), equal A's.
* Umami's ``website_event`` CSV and GoatCounter's CSV export, made here with their documented
  columns, imported twice each: the page views per day and page of the rollup are the files',
  once.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
import uuid
from collections import Counter
from pathlib import Path

import pymongo
import pytest
from django.core.management import call_command
from pyspark.sql import SparkSession

import collector.runtime
from collector.ingest import Ingestor
from footfall.config import Config
from footfall.goals import FunnelSpec, GoalSpec
from footfall.models import Site
from footfall_capture.events import encode
from footfall_capture.sink import KafkaSink
from footfall_capture.spool import Spool
from historical.store import BREAKDOWNS, DAILY, ROLLUP_COLLECTIONS, documents
from query import raw_export
from tests.integration.batch.test_rollup_e2e import GOALS, TZ, archive_topic, two_days_of_traffic
from tests.spark_session import roll_up_in_session
from tests.unit.collector.test_imported_formats import GOAT_HEADER, GOAT_ROW, UMAMI_HEADER, umami_row, write_csv

pytestmark = pytest.mark.django_db
FUNNEL = FunnelSpec("f1", (GoalSpec("s1", "page", path="/"), GoalSpec("s2", "page", path="/docs/*")), name="Docs")
# Fields of a rollup document that say when and from what it was made, not what it counts.
MADE = {"_id", "site_id", "computed_at", "run_id", "events_read", "late_events", "spark_master"}


@pytest.fixture
def batch_cfg(cfg: Config, rt_topic: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Config:
    """A private archive, database and topic; the collector's ingestor sends to that topic."""
    private = dataclasses.replace(cfg, events_topic=rt_topic, archive_url=(tmp_path / "archive").as_uri(),
                                  mongo_db=f"test_{uuid.uuid4().hex[:10]}")  # fmt: skip
    sink = KafkaSink(private.kafka, Spool(tmp_path / "spool", 1 << 26))
    monkeypatch.setattr(collector.runtime, "_ingestor", Ingestor(private, sink))
    monkeypatch.setattr(raw_export, "footfall_config", lambda: private)
    yield private
    client: pymongo.MongoClient = pymongo.MongoClient(cfg.mongo_url)
    client.drop_database(private.mongo_db)
    client.close()


def content(cfg: Config, site: str, days: list[str]) -> dict[str, list[dict]]:
    """The site's rollup documents for ``days``, without what says when and from what they were made."""
    client: pymongo.MongoClient = pymongo.MongoClient(cfg.mongo_url)
    try:
        docs = documents(client[cfg.mongo_db], site, days)
    finally:
        client.close()
    return {name: sorted(str({k: v for k, v in d.items() if k not in MADE}) for d in found)
            for name, found in docs.items()}  # fmt: skip


def test_an_export_imported_into_new_sites_answers_the_same(
    batch_cfg: Config, rt_topic: str, tmp_path: Path, spark: SparkSession
) -> None:
    a, b, c = (f"{name}-{uuid.uuid4().hex[:6]}" for name in ("a", "b", "c"))
    for site in (a, b, c):
        Site.objects.create(site_id=site, name=site, domains=["demo.footfall.local"], timezone=TZ)
    collector.runtime.get_ingestor().sites.invalidate()
    events, days = two_days_of_traffic(a)
    # What the collector takes: an engagement report with a negative engaged time never reaches the archive.
    events = [e for e in events if e.type != "engagement" or e.props["engaged_ms"] >= 0]
    # Sent to A through the import (their own times), so A's archive holds what the collector makes of them.
    sent = tmp_path / "sent.jsonl"
    sent.write_bytes(b"".join(encode(e) + b"\n" for e in events))
    call_command("import_events", str(sent), "--site", a, "--format", "footfall", "--no-progress",
                 stdout=io.StringIO())  # fmt: skip
    archive_topic(batch_cfg, rt_topic, len(events))
    first, last = dt.date.fromisoformat(days[0]), dt.date.fromisoformat(days[-1])
    definitions = {"goals": {s: GOALS for s in (a, b, c)}, "funnels": {s: [FUNNEL] for s in (a, b, c)}}
    roll_up_in_session(spark, batch_cfg, first, last, [a], **definitions)

    end = (last + dt.timedelta(days=1)).isoformat()
    for fmt, into in (("parquet", b), ("csv", c)):
        out = tmp_path / f"a.{fmt}"
        call_command("export_events", "--site", a, "--from", days[0], "--to", end, "--format", fmt,
                     "--output", str(out), stderr=io.StringIO())  # fmt: skip
        call_command("import_events", str(out), "--site", into, "--format", "footfall", "--from-site", a,
                     "--no-progress", stdout=io.StringIO())  # fmt: skip
    unique = len({e.event_id for e in events})
    archive_topic(batch_cfg, rt_topic, 2 * unique)
    roll_up_in_session(spark, batch_cfg, first, last, [b, c], **definitions)

    want = content(batch_cfg, a, days)
    assert want[DAILY]
    assert want[BREAKDOWNS]
    for site in (b, c):
        got = content(batch_cfg, site, days)
        for name in ROLLUP_COLLECTIONS:
            assert got[name] == [d.replace(a, site) for d in want[name]], (site, name)


def test_umami_and_goatcounter_files_count_once_however_often_imported(
    batch_cfg: Config, rt_topic: str, tmp_path: Path, spark: SparkSession
) -> None:
    umami, goat = f"umami-{uuid.uuid4().hex[:6]}", f"goat-{uuid.uuid4().hex[:6]}"
    for site in (umami, goat):
        Site.objects.create(site_id=site, name=site, domains=["example.com"], timezone="UTC")
    collector.runtime.get_ingestor().sites.invalidate()
    # Three UTC days, pages /p0../p3, a visitor every few events; custom events besides.
    truth: Counter[tuple[str, str]] = Counter()
    umami_rows, goat_rows = [], []
    for n in range(120):
        day, page = dt.date(2026, 10, 1 + n % 3), f"/p{n % 4}"
        at = dt.datetime.combine(day, dt.time(8 + n % 10, n % 60), dt.UTC)
        truth[(day.isoformat(), page)] += 1
        umami_rows.append(umami_row(event_id=str(uuid.UUID(int=n + 1)), session_id=f"s{n % 7}", url_path=page,
                                    created_at=at.strftime("%Y-%m-%d %H:%M:%S.000")))  # fmt: skip
        goat_rows.append(
            GOAT_ROW | {"2Path": page, "Session": str(n % 7), "Date": at.isoformat().replace("+00:00", "Z")}
        )
    umami_rows.append(umami_row(event_id=str(uuid.UUID(int=999)), event_type="2", event_name="signup"))
    goat_rows.append(GOAT_ROW | {"2Path": "signup", "Event": "true", "Date": "2026-10-02T10:00:00Z"})
    umami_file = write_csv(tmp_path / "website_event.csv", UMAMI_HEADER, umami_rows)
    goat_file = write_csv(tmp_path / "goatcounter.csv", GOAT_HEADER, goat_rows)
    for _ in range(2):
        call_command("import_events", str(umami_file), "--site", umami, "--format", "umami", "--no-progress",
                     stdout=io.StringIO())  # fmt: skip
        call_command("import_events", str(goat_file), "--site", goat, "--format", "goatcounter", "--no-progress",
                     "--base-url", "https://example.com", stdout=io.StringIO())  # fmt: skip
    archive_topic(batch_cfg, rt_topic, 4 * 121)
    roll_up_in_session(spark, batch_cfg, dt.date(2026, 10, 1), dt.date(2026, 10, 3), [umami, goat])

    client: pymongo.MongoClient = pymongo.MongoClient(batch_cfg.mongo_url)
    db = client[batch_cfg.mongo_db]
    try:
        for site in (umami, goat):
            pages = Counter({(d["day"], d["value"]): d["pageviews"]
                             for d in db[BREAKDOWNS].find({"site_id": site, "dimension": "page"})})  # fmt: skip
            assert pages == truth, site
            daily = {d["day"]: d["pageviews"] for d in db[DAILY].find({"site_id": site})}
            assert daily == {day: sum(v for (d, _), v in truth.items() if d == day) for day, _ in truth}
    finally:
        client.close()


def test_a_bad_file_imports_nothing(batch_cfg: Config, tmp_path: Path) -> None:
    site = f"bad-{uuid.uuid4().hex[:6]}"
    Site.objects.create(site_id=site, name=site, domains=["example.com"])
    collector.runtime.get_ingestor().sites.invalidate()
    rows = [umami_row(event_id=str(uuid.UUID(int=n + 1))) for n in range(5)]
    rows[3]["created_at"] = "03/10/2026"
    path = write_csv(tmp_path / "website_event.csv", UMAMI_HEADER, rows)
    with pytest.raises(Exception, match=r"nothing imported: website_event\.csv:5, column created_at"):
        call_command("import_events", str(path), "--site", site, "--format", "umami", "--no-progress")
    assert collector.runtime.get_ingestor().sink.flush(5) == 0
