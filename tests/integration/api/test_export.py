"""The raw export over the API and from ``manage.py export_events``, on the stack's (local)
archive: a key with the export scope streams the site's events of the range, one copy each,
in the site's time zone; other keys, formats and ranges get the API's errors."""

from __future__ import annotations

import csv
import io
import json
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from archive.schema import partition_path, to_row
from archive.store import Archive, ArchiveRow
from footfall.config import Config
from footfall.demo import DemoTraffic
from footfall.models import ApiKey
from footfall_capture.events import Event, encode
from tests.integration.api.conftest import SiteKey, make_site

NY_DAY = "2026-03-10"
NY_MIDNIGHT = 1_773_115_200_000  # 2026-03-10 00:00 in New York (EDT begins on the 8th): 04:00 UTC


@pytest.fixture
def exported_site(db: None, cfg: Config) -> tuple[SiteKey, list[Event]]:
    """A New York site with 48 events every 45 minutes from 6 h before its day, archived twice over (a
    re-archived batch); another site's events at the same times."""
    owner = make_site(tz="America/New_York", scopes=("export",))
    archive = Archive.from_config(cfg)
    events = []
    for site in (owner.site.site_id, f"other-{uuid.uuid4().hex[:6]}"):
        gen = DemoTraffic(site_id=site, seed=3)
        these = [gen.event(NY_MIDNIGHT - 6 * 3_600_000 + i * 45 * 60_000) for i in range(48)]
        rows = [ArchiveRow(partition_path(site, e.ts), to_row(e, encode(e), 0, i)) for i, e in enumerate(these)]
        archive.write(rows)
        archive.write(rows[::2])
        events = events or these
    return owner, events


def in_day(events: list[Event]) -> list[Event]:
    return sorted(
        (e for e in events if NY_MIDNIGHT <= e.ts < NY_MIDNIGHT + 86_400_000), key=lambda e: (e.ts, e.event_id)
    )


def test_a_day_of_events_in_every_format(client: Client, exported_site: tuple[SiteKey, list[Event]]) -> None:
    owner, events = exported_site
    want = in_day(events)
    assert 0 < len(want) < len(events)

    parquet = owner.get(client, "export", **{"from": NY_DAY, "to": "2026-03-11"})
    assert parquet.status_code == 200
    assert parquet["Content-Type"] == "application/vnd.apache.parquet"
    table = pq.read_table(pa.BufferReader(b"".join(parquet.streaming_content)))
    assert table.column("event_id").to_pylist() == [e.event_id for e in want]
    assert table.column("country").to_pylist() == [e.country for e in want]

    answer = owner.get(client, "export", **{"from": NY_DAY, "to": "2026-03-11", "format": "csv"})
    rows = list(csv.DictReader(io.StringIO(b"".join(answer.streaming_content).decode())))
    assert [(r["event_id"], int(r["ts"]), r["path"]) for r in rows] == [(e.event_id, e.ts, e.path) for e in want]

    answer = owner.get(client, "export", **{"from": NY_DAY, "to": "2026-03-11", "format": "jsonl"})
    lines = b"".join(answer.streaming_content).decode().splitlines()
    assert [json.loads(line)["event_id"] for line in lines] == [e.event_id for e in want]


def test_the_command_writes_the_same_file(tmp_path, client: Client, exported_site: tuple[SiteKey, list[Event]]) -> None:
    owner, events = exported_site
    out = tmp_path / "export.parquet"
    call_command("export_events", "--site", owner.site.site_id, "--from", NY_DAY, "--to", "2026-03-11",
                 "--output", str(out), stderr=io.StringIO())  # fmt: skip
    assert pq.read_table(out).column("event_id").to_pylist() == [e.event_id for e in in_day(events)]
    with pytest.raises(CommandError, match="--to: must be after from"):
        call_command("export_events", "--site", owner.site.site_id, "--from", NY_DAY, "--to", "2026-03-01")
    with pytest.raises(CommandError, match="no site 'nope'"):
        call_command("export_events", "--site", "nope", "--from", NY_DAY)


def test_keys_formats_and_ranges_are_checked(client: Client, exported_site: tuple[SiteKey, list[Event]]) -> None:
    owner, _ = exported_site
    elsewhere = make_site(scopes=("export",))  # an export key of another site
    refused = client.get(f"/api/v1/sites/{owner.site.site_id}/export", {"from": NY_DAY},
                         HTTP_AUTHORIZATION=f"Bearer {elsewhere.key}")  # fmt: skip
    assert refused.status_code == 404
    _, read_key = ApiKey.issue(owner.site, "reader", ["read"])
    answer = client.get(f"/api/v1/sites/{owner.site.site_id}/export", {"from": NY_DAY},
                        HTTP_AUTHORIZATION=f"Bearer {read_key}")  # fmt: skip
    assert answer.status_code == 403
    assert "no export scope" in answer.json()["error"]["message"]
    bad = owner.get(client, "export", **{"from": NY_DAY, "format": "xml"})
    assert bad.status_code == 400
    assert bad.json()["error"]["parameter"] == "format"
    backwards = owner.get(client, "export", **{"from": NY_DAY, "to": "2026-03-01"})
    assert (backwards.status_code, backwards.json()["error"]["parameter"]) == (400, "to")
    empty = owner.get(client, "export", **{"from": "2026-01-01", "to": "2026-01-02", "format": "csv"})
    assert b"".join(empty.streaming_content).decode().splitlines()[0].startswith('"site_id","event_id"')
