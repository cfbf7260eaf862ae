"""``manage.py imports`` on the real Mongo-wire server: a Plausible-format export (made from a
known truth) is stored apart from the rollups, per site and day, listed with its metadata,
refused when it overlaps an import already there or is malformed (nothing stored), and
deleted leaving the site's own documents as they were."""

from __future__ import annotations

import datetime as dt
import io
import re
import uuid
import zipfile
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from footfall.config import Config
from footfall.models import Site
from historical.imported import IMPORTED_BREAKDOWNS, IMPORTED_DAILY, IMPORTS
from historical.plausible_export import read_export
from historical.store import DAILY, connect
from tests.plausible_zip import D1, D2, TABLES, table_csv, write_export


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("imports", *args, stdout=out)
    return out.getvalue()


def test_an_export_is_stored_apart_listed_refused_when_overlapping_and_deleted(
    transactional_db: None, cfg: Config, tmp_path: Path
) -> None:
    site = f"pl-{uuid.uuid4().hex[:8]}"
    Site.objects.create(site_id=site, name=site, domains=["example.com"], timezone="UTC")
    path = write_export(tmp_path / "export.zip", TABLES, D1, D2)
    truth = read_export(path)
    client, db = connect(cfg.mongo_url, cfg.mongo_db)
    own = {"_id": f"{site}|2025-03-01", "site_id": site, "day": "2025-03-01", "pageviews": 7}
    db[DAILY].insert_one(own)  # a day the site counted itself: no import touches it
    try:
        said = run("add", "--site", site, str(path))
        import_id = re.match(r"imported (\w+) into ", said)[1]  # type: ignore[index]
        assert "2 days, 2025-03-01 to 2025-03-02 (browsers 2, custom_events 1, devices 1, exit_pages 1," in said

        daily = {doc["day"]: doc for doc in db[IMPORTED_DAILY].find({"site_id": site})}
        assert set(daily) == {"2025-03-01", "2025-03-02"}
        for day, imported in truth.days.items():
            assert {key: daily[day.isoformat()][key] for key in imported.totals} == imported.totals
        counted = ("visitors", "pageviews", "visits", "events")
        stored = {
            (doc["day"], doc["dimension"], doc["value"]): {k: v for k, v in doc.items() if k in counted}
            for doc in db[IMPORTED_BREAKDOWNS].find({"site_id": site})
        }
        assert stored == {
            (day.isoformat(), dimension, value): counts
            for day, imported in truth.days.items()
            for dimension, values in imported.breakdowns.items()
            for value, counts in values.items()
        }
        listed = run("list", "--site", site)
        assert f"{import_id}  {site}  plausible  2025-03-01 to 2025-03-02  2 days" in listed
        assert "complete" in listed

        # The same days again, and a malformed file: refused, nothing stored.
        with pytest.raises(CommandError, match=rf"2025-03-0\d is imported already \(import {import_id}, .*nothing was"):
            run("add", "--site", site, str(path))
        bad = tmp_path / "bad.zip"
        with zipfile.ZipFile(bad, "w") as archive:
            rows = [{**TABLES["visitors"][0], "date": "2025-04-01"}, {**TABLES["visitors"][0], "date": "1 April"}]
            archive.writestr("imported_visitors_20250401_20250401.csv", table_csv("visitors", rows))
        with pytest.raises(CommandError, match=r"imported_visitors_20250401_20250401.csv:3, column date: '1 April'"):
            run("add", "--site", site, str(bad))
        assert db[IMPORTS].count_documents({"site_id": site}) == 1
        with pytest.raises(CommandError, match="no site 'nowhere'"):
            run("add", "--site", "nowhere", str(path))

        removed = run("delete", import_id)
        assert removed == f"deleted import {import_id}: {len(daily) + len(stored):,} documents\n"
        left = [db[name].count_documents({"site_id": site}) for name in (IMPORTS, IMPORTED_DAILY, IMPORTED_BREAKDOWNS)]
        assert left == [0, 0, 0]
        assert db[DAILY].find_one({"_id": own["_id"]}) == own
        assert run("list", "--site", site) == "no imports\n"
        with pytest.raises(CommandError, match=f"no import {import_id}"):
            run("delete", import_id)
    finally:
        for name in (IMPORTS, IMPORTED_DAILY, IMPORTED_BREAKDOWNS, DAILY):
            db[name].delete_many({"site_id": site})
        client.close()


def test_days_of_another_range_import_beside_the_first(transactional_db: None, cfg: Config, tmp_path: Path) -> None:
    site = f"pl-{uuid.uuid4().hex[:8]}"
    Site.objects.create(site_id=site, name=site, domains=["example.com"], timezone="UTC")
    march = write_export(tmp_path / "march.zip", {"visitors": TABLES["visitors"]}, D1, D2)
    later = [{**row, "date": row["date"].replace("03-0", "03-1")} for row in TABLES["visitors"]]  # type: ignore[union-attr]
    april = write_export(tmp_path / "later.zip", {"visitors": later}, dt.date(2025, 3, 11), dt.date(2025, 3, 12))
    client, db = connect(cfg.mongo_url, cfg.mongo_db)
    try:
        run("add", "--site", site, str(march))
        run("add", "--site", site, str(april))
        assert sorted(doc["day"] for doc in db[IMPORTED_DAILY].find({"site_id": site})) == [
            "2025-03-01", "2025-03-02", "2025-03-11", "2025-03-12",
        ]  # fmt: skip
        assert len(run("list", "--site", site).splitlines()) == 2
    finally:
        for name in (IMPORTS, IMPORTED_DAILY, IMPORTED_BREAKDOWNS):
            db[name].delete_many({"site_id": site})
        client.close()
