"""Parsing historical traffic: access-log lines and JSON lines into beacons."""

from __future__ import annotations

import pytest

from collector.beacon import BadBeacon
from collector.importing import line_event_id, parse_combined, parse_jsonl

LINE = (
    '203.0.113.9 - - [21/Nov/2025:13:55:36 +0100] "GET /blog/post?id=3 HTTP/1.1" 200 5120 '
    '"https://www.google.com/" "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"'
)


def test_page_view_from_a_combined_line() -> None:
    record = parse_combined(LINE, "demo", "https://example.com")
    assert record is not None
    beacon = record.beacon
    assert (beacon.type, beacon.url, beacon.referrer) == (
        "pageview",
        "https://example.com/blog/post?id=3",
        "https://www.google.com/",
    )
    assert beacon.ts == 1_763_729_736_000  # 12:55:36 UTC
    assert record.ip == "203.0.113.9"
    assert record.user_agent.startswith("Mozilla/5.0")


@pytest.mark.parametrize(
    "line",
    [
        LINE.replace("/blog/post?id=3", "/static/app.css"),
        LINE.replace('"GET', '"POST'),
        LINE.replace(" 200 ", " 404 "),
    ],
)
def test_assets_errors_and_posts_are_not_page_views(line: str) -> None:
    assert parse_combined(line, "demo", "https://example.com") is None
    record = parse_combined(line, "demo", "https://example.com", all_requests=True)
    assert record is not None
    assert record.beacon.type == "request"


@pytest.mark.parametrize(
    "line", ["garbage", '1.2.3.4 - - [bad time] "GET / HTTP/1.1" 200 1 "-" "-"', LINE.replace("/blog", "blog")]
)
def test_bad_lines_are_reported(line: str) -> None:
    with pytest.raises(BadBeacon):
        parse_combined(line, "demo", "https://example.com")


def test_ids_are_deterministic_per_line_and_site() -> None:
    first = parse_combined(LINE, "demo", "https://example.com")
    again = parse_combined(LINE, "demo", "https://example.com")
    assert first is not None
    assert again is not None
    assert first.beacon.event_id == again.beacon.event_id == line_event_id("demo", LINE)
    assert line_event_id("other", LINE) != line_event_id("demo", LINE)


def test_jsonl_needs_time_and_matching_site() -> None:
    record = parse_jsonl('{"site_id": "demo", "type": "signup", "ts": 1763729736000, "ip": "203.0.113.9"}', "demo")
    assert record is not None
    assert record.beacon.event_id is not None
    with pytest.raises(BadBeacon, match="ts"):
        parse_jsonl('{"site_id": "demo", "type": "signup"}', "demo")
    with pytest.raises(BadBeacon, match="site_mismatch"):
        parse_jsonl('{"site_id": "else", "type": "x", "ts": 1763729736000}', "demo")
    assert parse_jsonl("  \n", "demo") is None
