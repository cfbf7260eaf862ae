"""Rows of Umami's, GoatCounter's and Footfall's exports as importable records, and the file
reader's errors: file, line and column, before anything is imported."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from collector.import_files import records
from collector.imported_formats import BadRow, parse_export_row, parse_goatcounter, parse_umami
from footfall.file_problem import FileProblem

UMAMI_HEADER = ["event_id", "website_id", "session_id", "visit_id", "created_at", "url_path", "url_query",
                "page_title", "hostname", "referrer_path", "referrer_query", "referrer_domain", "event_type",
                "event_name", "tag"]  # fmt: skip
GOAT_HEADER = ["2Path", "Title", "Event", "UserAgent", "Browser", "System", "Session", "Bot", "Referrer",
               "Referrer scheme", "Screen size", "Location", "FirstVisit", "Date"]  # fmt: skip
WEBSITE = "5f3a0c4e-8d1b-4b5e-9a57-0d2c6f1e2a10"


def umami_row(**fields: str) -> dict[str, str]:
    row = dict.fromkeys(UMAMI_HEADER, "")
    row |= {"event_id": "0B9B6C38-1A57-4E07-9F4F-1C2B3A4D5E6F", "website_id": WEBSITE,
            "session_id": "a4e7c6b2-6f1d-4e43-8f0e-2b9c1d7e3f50", "created_at": "2026-10-03 14:05:09.123",
            "url_path": "/pricing", "url_query": "utm_source=newsletter", "hostname": "example.com",
            "referrer_domain": "news.ycombinator.com", "referrer_path": "/item", "event_type": "1"}  # fmt: skip
    return row | fields


def write_csv(path: Path, header: list[str], rows: list[dict[str, str]]) -> Path:
    with path.open("w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=header)
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_an_umami_page_view_and_custom_event() -> None:
    record = parse_umami(umami_row(), "site")
    beacon = record.beacon
    assert (beacon.type, beacon.url, beacon.ts) == ("pageview", "https://example.com/pricing?utm_source=newsletter",
                                                    1_791_036_309_123)  # fmt: skip
    assert beacon.referrer == "https://news.ycombinator.com/item"
    assert beacon.event_id == "0b9b6c38-1a57-4e07-9f4f-1c2b3a4d5e6f"  # Umami's own id: a second import counts once
    assert len(beacon.visitor_id) == 32
    assert parse_umami(umami_row(session_id="other"), "site").beacon.visitor_id != beacon.visitor_id
    assert (record.given.ua, record.given.country) == (None, None)  # Umami keeps those in its session table
    signup = parse_umami(umami_row(event_type="2", event_name="signup"), "site").beacon
    assert signup.type == "signup"
    with pytest.raises(BadRow) as bad:
        parse_umami(umami_row(created_at="yesterday"), "site")
    assert bad.value.column == "created_at"


GOAT_ROW = dict.fromkeys(GOAT_HEADER, "") | {
    "2Path": "/docs/start", "Title": "Start", "Event": "false", "Browser": "Firefox 133", "System": "Linux",
    "Session": "17", "Bot": "0", "Referrer": "duckduckgo.com/", "Referrer scheme": "h", "Location": "DE-BE",
    "Date": "2026-10-03T14:05:09Z",
}  # fmt: skip


def test_a_goatcounter_row() -> None:
    record = parse_goatcounter(GOAT_ROW, "site", "https://example.com", "the,line")
    assert (record.beacon.url, record.beacon.referrer) == ("https://example.com/docs/start", "https://duckduckgo.com/")
    assert (record.given.ua.browser, record.given.ua.os, record.given.country) == ("Firefox", "Linux", "DE")
    again = parse_goatcounter(GOAT_ROW, "site", "https://example.com", "the,line")
    assert again.beacon.event_id == record.beacon.event_id  # derived from the row: a second import counts once
    event = parse_goatcounter(GOAT_ROW | {"2Path": "click on buy", "Event": "true"}, "site", "https://e.com", "x")
    assert (event.beacon.type, event.beacon.url) == ("click-on-buy", None)
    named = GOAT_ROW | {"Referrer": "Hacker News", "Referrer scheme": "g"}  # a name, not a URL
    assert parse_goatcounter(named, "site", "https://e.com", "y").beacon.referrer is None


def test_a_footfall_export_row_keeps_what_was_worked_out() -> None:
    row = {"site_id": "a", "event_id": "0b9b6c38-1a57-4e07-9f4f-1c2b3a4d5e6f", "type": "signup", "ts": "1791036309123",
           "url": "https://example.com/join", "visitor_id": "ab" * 16, "ua_browser": "Chrome", "ua_os": "Mac OS X",
           "ua_device": "desktop", "is_bot": "false", "country": "NL", "props": '{"plan": "pro"}'}  # fmt: skip
    record = parse_export_row(row, "b")
    assert (record.beacon.site_id, record.beacon.visitor_id, record.beacon.props) == ("b", "ab" * 16, {"plan": "pro"})
    assert (record.given.ua.browser, record.given.ua.device, record.given.country) == ("Chrome", "desktop", "NL")
    with pytest.raises(BadRow, match="not a whole number") as bad:
        parse_export_row(row | {"ts": "soon"}, "b")
    assert bad.value.column == "ts"


def test_file_errors_name_the_file_line_and_column(tmp_path: Path) -> None:
    good = umami_row()
    path = write_csv(tmp_path / "website_event.csv", UMAMI_HEADER, [good, good | {"created_at": "31/12/2025"}])
    with pytest.raises(FileProblem, match=r"^website_event.csv:3, column created_at: not a date and time"):
        list(records(path, "umami", "site", None, None))
    missing = write_csv(tmp_path / "short.csv", UMAMI_HEADER[:3], [])
    with pytest.raises(FileProblem, match="not a umami export: no column created_at, url_path, event_type"):
        list(records(missing, "umami", "site", None, None))
    two = write_csv(tmp_path / "two.csv", UMAMI_HEADER, [good, good | {"website_id": "another"}])
    with pytest.raises(FileProblem, match="several websites"):
        list(records(two, "umami", "site", None, None))
    assert [line for line, _ in records(two, "umami", "site", None, WEBSITE)] == [2]
    export = write_csv(tmp_path / "a.csv", ["site_id", "event_id", "type", "ts"],
                       [{"site_id": "a", "event_id": good["event_id"], "type": "pageview", "ts": "1"}])  # fmt: skip
    with pytest.raises(FileProblem, match="events of site 'a'; importing them into 'b' needs --from-site a"):
        list(records(export, "footfall", "b", None, None))
    not_parquet = tmp_path / "x.parquet"
    not_parquet.write_bytes(b"PK\x03\x04")  # a zip
    with pytest.raises(FileProblem, match=r"^x\.parquet: not a Parquet file"):
        list(records(not_parquet, "footfall", "b", None, None))
