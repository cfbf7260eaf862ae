"""The HTTP boundary: payloads validated early, with reasons; client facts read safely."""

from __future__ import annotations

import ipaddress

import msgspec
import pytest

from collector.beacon import (
    BadBeacon,
    asks_not_to_track,
    parse_batch,
    parse_json,
    parse_query,
    to_draft,
)
from footfall_capture.enrich.addresses import client_address, client_ip

NOW = 1_763_700_000_000


def test_minimal_pageview() -> None:
    beacon = parse_json(b'{"site_id": "demo", "url": "https://example.com/"}')
    assert (beacon.site_id, beacon.type, beacon.url) == ("demo", "pageview", "https://example.com/")


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"", "empty_body"),
        (b"{", "malformed_json"),
        (b"[1]", "invalid_field"),
        (b'{"url": "https://x/"}', "invalid_field"),
        (b'{"site_id": "Bad Site", "url": "https://x/"}', "invalid_field"),
        (b'{"site_id": "demo"}', "invalid_field"),  # a pageview without url
        (b'{"site_id": "demo", "type": "x", "event_id": "123"}', "invalid_field"),
        (b'{"site_id": "demo", "type": "x", "props": {"a": [1]}}', "invalid_field"),
    ],
)
def test_bad_payloads_get_reasons(body: bytes, reason: str) -> None:
    with pytest.raises(BadBeacon) as err:
        parse_json(body)
    assert err.value.reason == reason


def test_too_many_props_are_refused() -> None:
    body = msgspec.json.encode({"site_id": "demo", "type": "x", "props": {f"k{i}": i for i in range(33)}})
    with pytest.raises(BadBeacon, match="props"):
        parse_json(body)


PAGEVIEW_ID = "2f1c9a4e-5b6d-4e7f-8a9b-0c1d2e3f4a5b"


def engagement(**props: object) -> bytes:
    """An engagement report's body as the tracker sends it, with ``props`` overriding its own."""
    base: dict[str, object] = {"engaged_ms": 5000, "scroll_depth": 40, "pageview_id": PAGEVIEW_ID}
    merged = {k: v for k, v in {**base, **props}.items() if v is not ...}  # ... removes a property
    return msgspec.json.encode(
        {"site_id": "demo", "type": "engagement", "url": "https://example.com/a", "props": merged}
    )


@pytest.mark.parametrize(
    "props",
    [
        {},
        {"engaged_ms": 0, "scroll_depth": 0},
        {"scroll_depth": 100},
        {"engaged_ms": 10**12},  # implausible but valid: the layers cap it
        {"scroll_depth": ...},  # a report may carry no scroll depth
        {"extra": "kept"},
    ],
)
def test_valid_engagement_reports_are_accepted(props: dict[str, object]) -> None:
    """An engagement report as the contract says parses like any event, its props unchanged."""
    beacon = parse_json(engagement(**props))
    assert beacon.type == "engagement"
    assert beacon.props is not None
    assert beacon.props["pageview_id"] == PAGEVIEW_ID
    assert {k: v for k, v in props.items() if v is not ...}.items() <= beacon.props.items()


@pytest.mark.parametrize(
    ("props", "named"),
    [
        ({"engaged_ms": ...}, "engaged_ms"),
        ({"engaged_ms": -1}, "engaged_ms"),
        ({"engaged_ms": 1500.5}, "engaged_ms"),
        ({"engaged_ms": 5000.0}, "engaged_ms"),
        ({"engaged_ms": "5000"}, "engaged_ms"),
        ({"engaged_ms": True}, "engaged_ms"),
        ({"engaged_ms": None}, "engaged_ms"),
        ({"engaged_ms": 2**63}, "engaged_ms"),
        ({"scroll_depth": 101}, "scroll_depth"),
        ({"scroll_depth": -1}, "scroll_depth"),
        ({"scroll_depth": 50.5}, "scroll_depth"),
        ({"scroll_depth": "50"}, "scroll_depth"),
        ({"scroll_depth": None}, "scroll_depth"),
        ({"pageview_id": ...}, "pageview_id"),
        ({"pageview_id": ""}, "pageview_id"),
        ({"pageview_id": 7}, "pageview_id"),
    ],
)
def test_bad_engagement_reports_name_the_property(props: dict[str, object], named: str) -> None:
    """An engagement report whose props break the contract is refused, naming the property."""
    with pytest.raises(BadBeacon) as err:
        parse_json(engagement(**props))
    assert err.value.reason == "invalid_field"
    assert f"props.{named}" in err.value.detail


def test_engagement_without_props_is_refused_everywhere() -> None:
    """No props at all (a pixel cannot carry them) is refused; one bad report spoils no batch."""
    with pytest.raises(BadBeacon, match="engaged_ms"):
        parse_json(b'{"site_id": "demo", "type": "engagement", "url": "https://example.com/"}')
    with pytest.raises(BadBeacon, match="engaged_ms"):
        parse_query({"site_id": "demo", "type": "engagement", "url": "https://example.com/"})
    items = parse_batch(b"[" + engagement() + b"," + engagement(scroll_depth=120) + b"]", limit=10)
    assert [type(i).__name__ for i in items] == ["Beacon", "BadBeacon"]


def test_engagement_props_are_checked_only_on_engagement_events() -> None:
    """A custom event may use the same property names with any values."""
    body = b'{"site_id": "demo", "type": "video", "props": {"engaged_ms": "long", "scroll_depth": 500}}'
    assert parse_json(body).props == {"engaged_ms": "long", "scroll_depth": 500}


def test_pixel_query() -> None:
    beacon = parse_query({"site_id": "demo", "url": "https://example.com/a", "referrer": "", "title": "A"})
    assert beacon.referrer is None
    assert beacon.title == "A"
    with pytest.raises(BadBeacon, match="site_id"):
        parse_query({"url": "https://example.com/"})


def test_batch_items_fail_alone() -> None:
    body = b'[{"site_id": "demo", "url": "https://e.com/"}, {"site_id": 5}, {"site_id": "demo", "type": "signup"}]'
    items = parse_batch(body, limit=10)
    assert [type(i).__name__ for i in items] == ["Beacon", "BadBeacon", "Beacon"]


@pytest.mark.parametrize(
    ("body", "reason"), [(b"[]", "empty_batch"), (b"{}", "invalid_field"), (b"[", "malformed_json")]
)
def test_bad_batches(body: bytes, reason: str) -> None:
    with pytest.raises(BadBeacon) as err:
        parse_batch(body, limit=10)
    assert err.value.reason == reason


def test_batch_limit() -> None:
    with pytest.raises(BadBeacon, match="at most 2"):
        parse_batch(b"[{}, {}, {}]", limit=2)


@pytest.mark.parametrize(
    ("remote", "xff", "proxies", "expected"),
    [
        ("203.0.113.9", None, 0, "203.0.113.9"),
        ("10.0.0.1", "198.51.100.7", 0, "10.0.0.1"),  # XFF ignored without trusted proxies
        ("10.0.0.1", "1.1.1.1, 198.51.100.7", 1, "198.51.100.7"),  # the left entry is client-controlled
        ("10.0.0.1", "198.51.100.7, 10.0.0.2", 2, "198.51.100.7"),
        ("10.0.0.1", "junk", 1, None),
        ("::ffff:1.2.3.4", None, 0, "::ffff:102:304"),
        ("not-an-ip", None, 0, None),
    ],
)
def test_client_ip(remote: str, xff: str | None, proxies: int, expected: str | None) -> None:
    assert client_ip(remote, xff, proxies) == expected
    parsed = client_address(remote, xff, proxies)
    assert (parsed and parsed.text) == expected  # the same address, parsed for the draft


SITE_PROXIES = [ipaddress.ip_network("192.0.2.0/24")]  # a tracked site's own servers


@pytest.mark.parametrize(
    ("remote", "xff", "proxies", "expected"),
    [
        ("10.0.0.1", "198.51.100.7, 192.0.2.5", 1, "198.51.100.7"),  # through the site's proxy and ours
        ("10.0.0.1", "198.51.100.7", 1, "198.51.100.7"),  # straight to ours: as without forwarders
        ("192.0.2.5", "198.51.100.7", 0, "198.51.100.7"),  # the site's proxy talks to the collector itself
        ("10.0.0.1", "192.0.2.9, 192.0.2.5", 1, "192.0.2.9"),  # a forwarder's own request: nothing left of it
        ("10.0.0.1", "6.6.6.6, 198.51.100.7, 192.0.2.5", 1, "198.51.100.7"),  # only forwarders are walked past
        ("198.51.100.7", "6.6.6.6", 0, "198.51.100.7"),  # a visitor's own X-Forwarded-For is still ignored
    ],
)
def test_client_ip_behind_a_sites_forwarding_proxy(remote: str, xff: str, proxies: int, expected: str) -> None:
    assert client_ip(remote, xff, proxies, SITE_PROXIES) == expected
    parsed = client_address(remote, xff, proxies, SITE_PROXIES)
    assert (parsed and parsed.text) == expected


def test_privacy_signals() -> None:
    assert asks_not_to_track({"DNT": "1"})
    assert asks_not_to_track({"Sec-GPC": "1"})
    assert not asks_not_to_track({"DNT": "0"})


def test_draft_uses_server_time_and_keeps_client_event_id() -> None:
    beacon = parse_json(
        b'{"site_id": "demo", "url": "https://e.com/", "event_id": "0190F2A4-6B7E-7C3D-8A1B-2C3D4E5F6A7B"}'
    )
    draft = to_draft(beacon, now_ms=NOW, ip="203.0.113.9", user_agent="UA", dnt=False)
    assert draft.ts == NOW
    assert draft.event_id == "0190f2a4-6b7e-7c3d-8a1b-2c3d4e5f6a7b"


def test_client_time_only_for_batches_and_inside_the_window() -> None:
    beacon = parse_json(b'{"site_id": "demo", "type": "x", "ts": %d}' % (NOW - 3_600_000))
    with pytest.raises(BadBeacon, match="server-side"):
        to_draft(beacon, now_ms=NOW, ip=None, user_agent="", dnt=False)
    draft = to_draft(beacon, now_ms=NOW, ip=None, user_agent="", dnt=False, ts_window=(7_200_000, 300_000))
    assert draft.ts == NOW - 3_600_000
    with pytest.raises(BadBeacon) as err:
        to_draft(beacon, now_ms=NOW, ip=None, user_agent="", dnt=False, ts_window=(1_000, 300_000))
    assert err.value.reason == "ts_out_of_window"
