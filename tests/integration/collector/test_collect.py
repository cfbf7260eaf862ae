"""The public endpoints over real Kafka and Redis: answers, reasons, and what reaches the log."""

from __future__ import annotations

import json
import time

import msgspec
import pytest
from django.test import Client

from footfall.models import ApiKey, Site
from footfall_capture.events import decode
from tests.integration.kafka_tail import TopicTail

CHROME = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
)
IP = "81.2.69.160"  # a GB address in the bundled GeoIP database


def beacon(client: Client, body: object, ip: str = IP, **headers: str):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return client.post("/collect", data, content_type="text/plain", REMOTE_ADDR=ip, HTTP_USER_AGENT=CHROME, **headers)


def of_site(site: Site):
    return lambda msg: decode(msg.value()).site_id == site.site_id


def test_beacon_is_enriched_and_reaches_kafka_without_the_ip(
    client: Client, site: Site, events_tail: TopicTail
) -> None:
    """A sendBeacon-style text/plain POST gets 202 and an enriched, IP-free event on the log."""
    resp = beacon(
        client,
        {
            "site_id": site.site_id,
            "url": "https://Example.com/pricing?utm_source=news&utm_campaign=launch&fbclid=abc&plan=pro#top",
            "referrer": "https://www.google.com/search?q=footfall",
            "title": "Pricing",
        },
    )
    assert resp.status_code == 202, resp.content
    assert resp.json()["status"] == "queued"
    [msg] = events_tail.read(of_site(site), 1)
    assert IP.encode() not in msg.value()
    assert b"Mozilla/5.0" not in msg.value()
    event = decode(msg.value())
    assert event.event_id == resp.json()["event_id"]
    assert event.url == "https://example.com/pricing"
    assert (event.host, event.path, event.title) == ("example.com", "/pricing", "Pricing")
    assert (event.ref_domain, event.ref_type) == ("google.com", "search")
    assert (event.utm.source, event.utm.campaign) == ("news", "launch")
    assert (event.ua.browser, event.ua.os, event.ua.device, event.ua.is_bot) == ("Chrome", "Windows", "desktop", False)
    assert event.country == "GB"
    assert len(event.visitor_id) == 32
    assert msg.key() == event.visitor_id.encode()


def test_same_visitor_same_id_within_a_day(client: Client, site: Site, events_tail: TopicTail) -> None:
    for path in ("/a", "/b"):
        assert beacon(client, {"site_id": site.site_id, "url": f"https://example.com{path}"}).status_code == 202
    msgs = events_tail.read(of_site(site), 2)
    assert len({decode(m.value()).visitor_id for m in msgs}) == 1


def test_client_event_id_is_kept_for_dedupe(client: Client, site: Site, events_tail: TopicTail) -> None:
    """A retried beacon carries the same id twice; consumers count it once."""
    body = {"site_id": site.site_id, "type": "signup", "url": "https://example.com/join",
            "event_id": "0190f2a4-6b7e-7c3d-8a1b-2c3d4e5f6a7b"}  # fmt: skip
    assert beacon(client, body).status_code == 202
    assert beacon(client, body).status_code == 202
    ids = [decode(m.value()).event_id for m in events_tail.read(of_site(site), 2)]
    assert ids == [body["event_id"]] * 2


@pytest.mark.parametrize(
    ("body", "status", "reason"),
    [
        (b"{not json", 400, "malformed_json"),
        (b"", 400, "empty_body"),
        (b'{"site_id": "x y", "url": "https://e.com/"}', 400, "invalid_field"),
        (b'{"site_id": "no-such-site", "url": "https://e.com/"}', 403, "unknown_site"),
    ],
)
def test_bad_input_gets_a_reason(client: Client, site: Site, body: bytes, status: int, reason: str) -> None:
    resp = beacon(client, body)
    assert resp.status_code == status
    assert resp.json()["error"] == reason
    assert resp.json()["detail"]


def test_engagement_reports_are_checked_then_accepted(client: Client, site: Site, events_tail: TopicTail) -> None:
    """A bad engagement report gets 400 naming the property; a good one reaches the log with its referrer's labels."""
    props: dict[str, object] = {
        "engaged_ms": 4200,
        "scroll_depth": 101,
        "pageview_id": "0190f2a4-6b7e-7c3d-8a1b-2c3d4e5f6a7b",
    }
    report = {
        "site_id": site.site_id,
        "type": "engagement",
        "url": "https://example.com/pricing",
        "referrer": "https://www.google.com/search?q=footfall",
        "props": props,
    }
    resp = beacon(client, report)
    assert resp.status_code == 400, resp.content
    assert resp.json()["error"] == "invalid_field"
    assert "props.scroll_depth" in resp.json()["detail"]

    props["scroll_depth"] = 64
    resp = beacon(client, report)
    assert resp.status_code == 202, resp.content
    [msg] = events_tail.read(of_site(site), 1)
    event = decode(msg.value())
    assert event.event_id == resp.json()["event_id"]
    assert (event.type, event.path, event.props) == ("engagement", "/pricing", props)
    assert (event.ref_domain, event.ref_type) == ("google.com", "search")


def test_oversized_body_is_refused_before_reading(client: Client, site: Site) -> None:
    body = json.dumps({"site_id": site.site_id, "type": "x", "props": {"k": "v" * 70_000}}).encode()
    resp = beacon(client, body)
    assert resp.status_code == 413
    assert resp.json()["error"] == "body_too_large"


def test_foreign_origin_is_refused(client: Client, site: Site) -> None:
    ok = beacon(client, {"site_id": site.site_id, "url": "https://example.com/"}, HTTP_ORIGIN="https://www.example.com")
    assert ok.status_code == 202
    assert ok["Access-Control-Allow-Origin"] == "https://www.example.com"
    bad = beacon(client, {"site_id": site.site_id, "url": "https://example.com/"}, HTTP_ORIGIN="https://evil.test")
    assert bad.status_code == 403
    assert bad.json()["error"] == "origin_not_allowed"


def test_an_origin_no_browser_sends_is_not_echoed(client: Client, site: Site) -> None:
    """A raw client's Origin with a CR once made the CORS header unwritable (a 500; found by fuzzing)."""
    body = {"site_id": site.site_id, "url": "https://example.com/"}
    for origin in ("x\r\x1e", "https://exa\nmple.com", "https://例え.jp"):
        resp = beacon(client, body, HTTP_ORIGIN=origin)
        assert resp.status_code == 403, (origin, resp.status_code)
        assert "Access-Control-Allow-Origin" not in resp
        pixel = client.get("/p.gif", body, REMOTE_ADDR=IP, HTTP_USER_AGENT=CHROME, HTTP_ORIGIN=origin)
        assert pixel.status_code in (202, 403), (origin, pixel.status_code)
        assert "Access-Control-Allow-Origin" not in pixel


def test_preflight_allows_json_beacons(client: Client) -> None:
    resp = client.options("/collect", HTTP_ORIGIN="https://example.com", HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST")
    assert resp.status_code == 204
    assert resp["Access-Control-Allow-Origin"] == "https://example.com"
    assert "POST" in resp["Access-Control-Allow-Methods"]
    assert resp["Access-Control-Allow-Headers"] == "Content-Type"


def test_flooding_client_gets_429_and_others_are_unaffected(client: Client, site: Site) -> None:
    body = {"site_id": site.site_id, "type": "ping", "url": "https://example.com/"}
    responses = [beacon(client, body, ip="192.0.2.50") for _ in range(130)]
    assert [r.status_code for r in responses[:100]] == [202] * 100  # the burst
    # Past the burst the bucket refills a token every 1/20 s, so an occasional request after
    # it is accepted: which ones depends on the clock, that some are refused does not.
    limited = [r for r in responses[100:] if r.status_code == 429]
    assert limited
    assert limited[-1].json()["error"] == "rate_limited"
    assert int(limited[-1]["Retry-After"]) >= 1
    assert beacon(client, body, ip="192.0.2.51").status_code == 202


def test_do_not_track_is_honoured(client: Client, site: Site, events_tail: TopicTail) -> None:
    page = "https://example.com/"
    resp = beacon(client, {"site_id": site.site_id, "type": "dnt-check", "url": page}, HTTP_DNT="1")
    assert resp.status_code == 202
    assert resp.json() == {"status": "ignored", "event_id": resp.json()["event_id"], "reason": "do_not_track"}
    assert beacon(client, {"site_id": site.site_id, "type": "marker", "url": page}).status_code == 202
    types = [decode(m.value()).type for m in events_tail.read(of_site(site), 1, settle=1.0)]
    assert types == ["marker"]


def test_pixel(client: Client, site: Site, events_tail: TopicTail) -> None:
    resp = client.get(
        "/p.gif", {"site_id": site.site_id, "url": "https://example.com/news", "referrer": "https://t.co/x"},
        REMOTE_ADDR=IP, HTTP_USER_AGENT=CHROME,
    )  # fmt: skip
    assert resp.status_code == 202
    assert resp["Content-Type"] == "image/gif"
    assert resp.content.startswith(b"GIF89a")
    [msg] = events_tail.read(of_site(site), 1)
    event = decode(msg.value())
    assert (event.path, event.ref_type) == ("/news", "social")


def test_tracker_script_is_served(client: Client) -> None:
    resp = client.get("/footfall.js")
    assert resp.status_code == 200
    assert resp["Content-Type"].startswith("application/javascript")
    assert b"sendBeacon" in resp.content


def test_batch_api_honours_event_times(client: Client, site: Site, events_tail: TopicTail) -> None:
    """Server-side events with their own times, ip and user agent; bad items rejected one by one."""
    _, key = ApiKey.issue(site, "server", ["ingest"])
    past = int(time.time() * 1000) - 3_600_000
    items = [
        {"site_id": site.site_id, "url": "https://example.com/old", "ts": past, "ip": IP, "user_agent": CHROME},
        {"site_id": site.site_id, "url": "https://example.com/ancient", "ts": 1_000_000_000_000},
        {"site_id": "someone-else", "url": "https://example.com/"},
        {"site_id": site.site_id},
    ]
    resp = client.post(
        f"/api/v1/sites/{site.site_id}/events", msgspec.json.encode(items), content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {key}",
    )  # fmt: skip
    assert resp.status_code == 202
    body = resp.json()
    assert (body["accepted"], body["rejected"]) == (1, 3)
    assert [r.get("error") for r in body["results"]] == [None, "ts_out_of_window", "site_mismatch", "invalid_field"]
    [msg] = events_tail.read(of_site(site), 1)
    event = decode(msg.value())
    assert event.ts == past
    assert event.country == "GB"
    assert IP.encode() not in msg.value()


@pytest.mark.parametrize(
    ("auth", "status", "reason"),
    [(None, 401, "missing_api_key"), ("Bearer ff_nope_nope", 401, "invalid_api_key")],
)
def test_batch_api_needs_a_key(client: Client, site: Site, auth: str | None, status: int, reason: str) -> None:
    headers = {"HTTP_AUTHORIZATION": auth} if auth else {}
    resp = client.post(f"/api/v1/sites/{site.site_id}/events", b"[]", content_type="application/json", **headers)
    assert resp.status_code == status
    assert resp.json()["error"] == reason


def test_batch_api_key_is_bound_to_its_site_and_scope(client: Client, site: Site) -> None:
    other = Site.objects.create(site_id=f"{site.site_id}-b", name="Other", domains=["other.test"])
    _, other_key = ApiKey.issue(other, "x", ["ingest"])
    _, read_key = ApiKey.issue(site, "x", ["read"])
    url = f"/api/v1/sites/{site.site_id}/events"
    body = b'[{"site_id": "%s", "type": "x"}]' % site.site_id.encode()
    cross = client.post(url, body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {other_key}")
    assert cross.status_code == 404
    scoped = client.post(url, body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {read_key}")
    assert scoped.status_code == 403
    assert scoped.json()["error"] == "missing_scope"


def test_foreign_page_host_is_refused_whatever_the_origin(client: Client, site: Site) -> None:
    """An allowed Origin, or none (the pixel, curl), does not let a page off the site's domains in."""
    foreign = {"site_id": site.site_id, "url": "https://evil.test/fake"}
    for headers in ({"HTTP_ORIGIN": "https://example.com"}, {}):
        resp = beacon(client, foreign, **headers)
        assert resp.status_code == 403, (headers, resp.content)
        assert resp.json()["error"] == "page_host_not_allowed"
        assert "evil.test" in resp.json()["detail"]
    assert beacon(client, {"site_id": site.site_id, "type": "signup"}).json()["error"] == "page_host_not_allowed"
    ok = beacon(client, {"site_id": site.site_id, "url": "https://shop.example.com/"})
    assert ok.status_code == 202, ok.content


def test_pixel_for_a_foreign_page_host_is_refused(client: Client, site: Site) -> None:
    resp = client.get("/p.gif", {"site_id": site.site_id, "url": "https://evil.test/"}, REMOTE_ADDR=IP)
    assert resp.status_code == 403
    assert resp.json()["error"] == "page_host_not_allowed"
    ok = client.get("/p.gif", {"site_id": site.site_id, "url": "https://www.example.com/a"}, REMOTE_ADDR=IP)
    assert ok.status_code == 202


def test_batch_api_checks_page_hosts_unless_the_key_has_any_host(client: Client, site: Site) -> None:
    """Only a key with the ingest:any-host scope may send pages off the site's domains."""
    items = [
        {"site_id": site.site_id, "url": "https://staging.test/a"},
        {"site_id": site.site_id, "url": "https://example.com/b"},
        {"site_id": site.site_id, "type": "signup"},  # a server's event with no page
    ]
    url = f"/api/v1/sites/{site.site_id}/events"
    _, plain = ApiKey.issue(site, "server", ["ingest"])
    _, any_host = ApiKey.issue(site, "proxy", ["ingest", "ingest:any-host"])
    resp = client.post(url, msgspec.json.encode(items), content_type="application/json",
                       HTTP_AUTHORIZATION=f"Bearer {plain}")  # fmt: skip
    assert [r.get("error") for r in resp.json()["results"]] == ["page_host_not_allowed", None, None]
    resp = client.post(url, msgspec.json.encode(items), content_type="application/json",
                       HTTP_AUTHORIZATION=f"Bearer {any_host}")  # fmt: skip
    assert resp.json()["accepted"] == 3, resp.json()
