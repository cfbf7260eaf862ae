"""ClickstreamMiddleware over HTTP, against the running collector: the host holds an ingest key
and no store credential, computes the visitor id the collector would, and sends only the IP's
network; the collector enriches the rest by the site's settings."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from django.http import HttpRequest, HttpResponse
from django.test import Client, RequestFactory
from pytest_django.live_server_helper import LiveServer

from collector.runtime import get_ingestor
from footfall.models import ApiKey, Site
from footfall_capture.events import decode
from footfall_capture.middleware import ClickstreamMiddleware
from tests.integration.collector.test_collect import CHROME, beacon, of_site
from tests.integration.kafka_tail import TopicTail

IP = "81.2.69.160"  # GB in the bundled GeoIP database


def page(request: HttpRequest) -> HttpResponse:
    return HttpResponse("<html><title>Hi</title></html>", content_type="text/html")


def test_page_views_over_http_match_the_collectors_own_events(
    transactional_db: None, live_server: LiveServer, events_tail: TopicTail, settings, tmp_path: Path
) -> None:
    site = Site.objects.create(site_id=f"t-{uuid.uuid4().hex[:10]}", name="Host", domains=["example.com"])
    get_ingestor().sites.invalidate()
    _, key = ApiKey.issue(site, "host", ["ingest"])
    settings.ALLOWED_HOSTS = ["example.com", "localhost", "testserver"]  # the host's, the collector's, the client's
    for name in ("FOOTFALL_KAFKA_BOOTSTRAP_SERVERS", "FOOTFALL_REDIS_URL"):
        assert not hasattr(settings, name)  # nothing of the server's stores
    settings.FOOTFALL_SITE_ID = site.site_id
    settings.FOOTFALL_COLLECTOR_URL = live_server.url
    settings.FOOTFALL_INGEST_KEY = key
    settings.FOOTFALL_SPOOL_DIR = str(tmp_path / "spool")
    settings.FOOTFALL_RESPECT_DNT = False  # sent with its flag: the site's policy on the server decides
    middleware = ClickstreamMiddleware(page)
    assert middleware.transport.__class__.__name__ == "HttpTransport"

    factory = RequestFactory()
    headers = {"HTTP_HOST": "example.com", "HTTP_USER_AGENT": CHROME, "REMOTE_ADDR": IP}
    for n in range(5):
        middleware(factory.get(f"/p/{n}", {"utm_source": "news"}, HTTP_REFERER="https://www.google.com/", **headers))
    middleware(factory.get("/private", HTTP_DNT="1", **headers))
    middleware(factory.get("/elsewhere", **headers))
    assert middleware.worker.drain(10)
    sent = [decode(m.value()) for m in events_tail.read(of_site(site), 6, timeout=60)]
    # The collector's own event for the same visitor (a browser beacon): the same visitor id.
    assert beacon(Client(), {"site_id": site.site_id, "url": "https://example.com/js"}).status_code == 202
    [own] = [decode(m.value()) for m in events_tail.read(lambda m: of_site(site)(m) and b"/js" in m.value(), 1)]

    views = sorted((e for e in sent if e.path.startswith("/p/")), key=lambda e: e.path)
    assert [e.path for e in views] == [f"/p/{n}" for n in range(5)]
    assert {e.visitor_id for e in sent} == {own.visitor_id}
    first = views[0]
    assert first.url == "http://example.com/p/0"  # canonical: the tracking parameter is in utm
    assert (first.country, first.ua.browser) == ("GB", "Chrome")
    assert (first.ref_domain, first.ref_type) == ("google.com", "search")
    assert first.utm is not None
    assert first.utm.source == "news"
    assert not any(e.path == "/private" for e in sent)  # DNT, and the site respects it on the server
    time.sleep(1.5)
    assert middleware.transport.sink.stats["sent"] == 7  # the DNT one reached the collector, which dropped it
    assert middleware.transport.sink.stats["spooled"] == 0
