"""Batches as a host site's HTTP transport sends them: gzip'd, with visitor ids it computed
from its site's salt, network prefixes for the country, and the visitors' Do-Not-Track."""

from __future__ import annotations

import gzip
import time
import uuid
from pathlib import Path

import msgspec
from django.http import HttpResponse
from django.test import Client
from pytest_django.live_server_helper import LiveServer

from collector.runtime import get_ingestor
from footfall.models import ApiKey, Site
from footfall_capture.events import decode
from footfall_capture.http_sink import Collector, HttpSink
from footfall_capture.spool import Spool
from tests.integration.collector.test_collect import CHROME, beacon, of_site
from tests.integration.kafka_tail import TopicTail

PREFIX = "81.2.69.0"  # the /24 of a GB address in the bundled GeoIP database
VISITOR = "0123456789abcdef0123456789abcdef"


def post(client: Client, site: Site, key: str, body: bytes, encoding: str | None = "gzip") -> HttpResponse:
    headers = {"HTTP_AUTHORIZATION": f"Bearer {key}"}
    if encoding:
        headers["HTTP_CONTENT_ENCODING"] = encoding
    return client.post(f"/api/v1/sites/{site.site_id}/events", body, content_type="application/json", **headers)


def test_a_gzipd_batch_keeps_the_senders_visitor_ids_and_places_prefixes(
    client: Client, site: Site, events_tail: TopicTail
) -> None:
    _, key = ApiKey.issue(site, "host", ["ingest"])
    now = int(time.time() * 1000)
    items = [
        {"site_id": site.site_id, "url": f"https://example.com/p{n}", "ts": now - n, "ip": PREFIX,
         "user_agent": CHROME, "visitor_id": VISITOR, "event_id": str(uuid.uuid4()), "dnt": n == 2}
        for n in range(3)
    ]  # fmt: skip
    resp = post(client, site, key, gzip.compress(msgspec.json.encode(items)))
    assert resp.status_code == 202, resp.content
    assert [(r["status"], r.get("reason")) for r in resp.json()["results"]] == [
        ("queued", None), ("queued", None), ("ignored", "do_not_track")  # the site honours DNT
    ]  # fmt: skip
    events = sorted((decode(m.value()) for m in events_tail.read(of_site(site), 2)), key=lambda e: e.path or "")
    assert [(e.path, e.visitor_id, e.country, e.ua.browser) for e in events] == [
        ("/p0", VISITOR, "GB", "Chrome"), ("/p1", VISITOR, "GB", "Chrome")
    ]  # fmt: skip


def test_bad_encodings_are_refused_with_a_clear_error(client: Client, site: Site) -> None:
    _, key = ApiKey.issue(site, "host", ["ingest"])
    bomb = gzip.compress(b" " * (4 * 1024 * 1024 + 1))  # 4 KiB that inflate past the 4 MiB bound
    answers = {
        "bomb": post(client, site, key, bomb),
        "not gzip": post(client, site, key, b'[{"site_id": "x"}]'),
        "cut short": post(client, site, key, gzip.compress(b'[{"site_id": "x"}]')[:-12]),
        "brotli": post(client, site, key, b"...", encoding="br"),
    }
    assert {what: (r.status_code, r.json()["error"]) for what, r in answers.items()} == {
        "bomb": (413, "body_too_large"),
        "not gzip": (400, "bad_gzip"),
        "cut short": (400, "bad_gzip"),
        "brotli": (415, "unsupported_content_encoding"),
    }


def test_a_browser_may_not_set_the_visitor_id_or_dnt(client: Client, site: Site) -> None:
    for field in ({"visitor_id": VISITOR}, {"dnt": False}):
        resp = beacon(client, {"site_id": site.site_id, "url": "https://example.com/", **field})
        assert resp.status_code == 400, field
        assert "server-side batches" in resp.json()["detail"]


def test_the_host_http_sink_delivers_to_the_running_collector(
    transactional_db: None, live_server: LiveServer, events_tail: TopicTail, tmp_path: Path
) -> None:
    """The host's sink against the real collector: gzip, the key, its answers understood."""
    site = Site.objects.create(site_id=f"t-{uuid.uuid4().hex[:10]}", name="Host", domains=["example.com"])
    get_ingestor().sites.invalidate()
    _, key = ApiKey.issue(site, "host", ["ingest"])
    sink = HttpSink(Collector(live_server.url, site.site_id, key), Spool(tmp_path / "spool", 1 << 24))
    now = int(time.time() * 1000)
    items = [
        {"site_id": site.site_id, "url": f"https://example.com/h{n}", "ts": now, "ip": PREFIX,
         "user_agent": CHROME, "visitor_id": VISITOR, "event_id": str(uuid.uuid4())}
        for n in range(700)
    ] + [{"site_id": site.site_id, "url": "https://elsewhere.test/", "event_id": str(uuid.uuid4())}]  # fmt: skip
    try:
        assert {sink.send(item) for item in items} == {"queued"}
        received = [decode(m.value()) for m in events_tail.read(of_site(site), 700, timeout=60)]
    finally:
        sink.close()
    assert sorted(e.event_id for e in received) == sorted(i["event_id"] for i in items[:700])
    assert {(e.visitor_id, e.country) for e in received} == {(VISITOR, "GB")}
    assert (sink.stats["sent"], sink.stats["rejected"], sink.stats["spooled"]) == (700, 1, 0)  # off the site: 403
