"""ClickstreamMiddleware in a host app: correct events on real Kafka, and never in the way."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest
import redis
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.test import RequestFactory

from footfall.config import Config
from footfall.models import Site
from footfall_capture.events import decode
from footfall_capture.middleware import ClickstreamMiddleware
from footfall_capture.salts import SaltStore
from footfall_capture.sink import KafkaSink
from footfall_capture.spool import Spool
from tests.integration.kafka_tail import TopicTail

CHROME = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
IP = "81.2.69.160"
PAGE = HttpResponse("<html><title>Hi</title></html>", content_type="text/html; charset=utf-8")


def host_view(request: HttpRequest) -> HttpResponse:
    if request.path.startswith("/api/"):
        return JsonResponse({"ok": True})
    return PAGE


@pytest.fixture(autouse=True)
def capture_settings(settings, cfg: Config, tmp_path: Path) -> None:
    """The capture library's own settings, as a host site sets them."""
    settings.FOOTFALL_KAFKA_BOOTSTRAP_SERVERS = cfg.kafka_bootstrap_servers
    settings.FOOTFALL_REDIS_URL = cfg.redis_url
    settings.FOOTFALL_SPOOL_DIR = str(tmp_path / "spool")


def middleware(settings, site: Site, **options: object) -> ClickstreamMiddleware:
    """The middleware for ``site``; ``options`` are FOOTFALL_<NAME> settings by name."""
    settings.ALLOWED_HOSTS = ["example.com"]
    settings.FOOTFALL_SITE_ID = site.site_id
    settings.FOOTFALL_DOMAINS = ["example.com"]
    for name, value in options.items():
        setattr(settings, f"FOOTFALL_{name}", value)
    return ClickstreamMiddleware(host_view)


def get(path: str, **extra: str) -> HttpRequest:
    headers = {"HTTP_HOST": "example.com", "HTTP_USER_AGENT": CHROME, "REMOTE_ADDR": IP, **extra}
    return RequestFactory().get(path, **headers)


def of_site(site: Site):
    return lambda msg: decode(msg.value()).site_id == site.site_id


def test_pageviews_arrive_and_the_response_is_untouched(settings, site: Site, events_tail: TopicTail) -> None:
    mw = middleware(settings, site, QUERY_PARAMS="id")
    response = mw(
        get("/blog/post?utm_source=hn&email=a%40b.example&id=7", HTTP_REFERER="https://news.ycombinator.com/item?id=1")
    )
    assert response is PAGE
    [msg] = events_tail.read(of_site(site), 1)
    event = decode(msg.value())
    assert (event.type, event.host, event.path) == ("pageview", "example.com", "/blog/post")
    assert event.url == "http://example.com/blog/post?id=7"
    assert (event.ref_domain, event.ref_type, event.utm.source) == ("news.ycombinator.com", "social", "hn")
    assert IP.encode() not in msg.value()


def test_every_enrichment_step_runs_on_middleware_events(settings, site: Site, events_tail: TopicTail) -> None:
    """The middleware's events go through the same steps as the collector's: country, agent, visitor."""
    mw = middleware(settings, site)
    mw(get("/enriched"))
    [msg] = events_tail.read(of_site(site), 1)
    event = decode(msg.value())
    assert (event.country, event.ua.browser, event.ua.device) == ("GB", "Chrome", "desktop")
    assert event.visitor_id is not None


def test_an_invalid_event_goes_to_the_invalid_topic_with_its_reason(
    settings, site: Site, cfg: Config, events_tail: TopicTail
) -> None:
    """A request the event schema refuses (method ``M-SEARCH``) is recorded on the invalid-events
    topic with its reason, counted as invalid, and never reaches the events topic."""
    invalid_tail = TopicTail(cfg, cfg.invalid_topic)
    try:
        mw = middleware(settings, site, TRACK="requests", EXCLUDE_PATHS=[])
        mw(RequestFactory().generic("M-SEARCH", "/ssdp", HTTP_HOST="example.com", REMOTE_ADDR=IP))
        mw(get("/marker"))
        assert mw.worker.drain(10)
        [dead] = invalid_tail.read(lambda m: site.site_id.encode() in (m.value() or b""), 1)
        headers = dict(dead.headers())
        assert headers["reason"] == b"invalid_field"
        assert b"method" in headers["detail"]
        assert mw.worker.stats["invalid_invalid_field"] == 1
        assert mw.worker.stats["failed"] == 0
        paths = [decode(m.value()).path for m in events_tail.read(of_site(site), 1, settle=1.0)]
        assert paths == ["/marker"]
    finally:
        invalid_tail.close()


def test_only_pages_are_tracked_by_default(settings, site: Site, events_tail: TopicTail) -> None:
    """Static files, admin, health checks, non-HTML responses and POSTs make no page view."""
    mw = middleware(settings, site)
    for request in (
        get("/static/app.css"), get("/admin/"), get("/healthz"), get("/api/data"),
        RequestFactory().post("/form", HTTP_HOST="example.com"),
    ):  # fmt: skip
        mw(request)
    mw(get("/marker"))
    paths = [decode(m.value()).path for m in events_tail.read(of_site(site), 1, settle=1.0)]
    assert paths == ["/marker"]


def test_request_mode_records_method_status_and_duration(settings, site: Site, events_tail: TopicTail) -> None:
    mw = middleware(settings, site, TRACK="requests", EXCLUDE_PATHS=[])
    mw(get("/api/data"))
    [msg] = events_tail.read(of_site(site), 1)
    event = decode(msg.value())
    assert (event.type, event.method, event.status, event.path) == ("request", "GET", 200, "/api/data")
    assert event.duration_ms is not None


def test_kafka_down_changes_nothing_for_the_host_and_spools(settings, site: Site, cfg: Config, tmp_path: Path) -> None:
    """With no broker reachable the host still gets its own response; the event is spooled."""
    mw = middleware(settings, site)
    dead = dataclasses.replace(cfg, kafka_bootstrap_servers="127.0.0.1:1")
    mw.transport.sink = KafkaSink(dead.kafka, Spool(tmp_path, 1 << 20), **{"message.timeout.ms": 1500})
    for _ in range(3):
        assert mw(get("/down")) is PAGE
    deadline = time.monotonic() + 30
    while mw.transport.sink.spool.pending() < 3 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert mw.transport.sink.spool.pending() == 3
    mw.transport.sink.close()


def test_without_a_held_salt_events_wait_in_memory_for_redis(settings, site: Site, events_tail: TopicTail) -> None:
    """Redis unreachable and no salt held yet: the page view waits (in memory, never on disk:
    it holds the IP) and is delivered once a salt can be had."""
    mw = middleware(settings, site)
    reachable = mw.transport.salts
    mw.transport.salts = SaltStore(redis.Redis.from_url("redis://127.0.0.1:1/0", socket_timeout=1))
    mw.worker.retry_interval = 0.2
    assert mw(get("/waits")) is PAGE
    assert not mw.worker.drain(1)  # the job is kept for later, not run, not dropped
    assert mw.worker.pending() >= 1
    mw.transport.salts = reachable
    assert mw.worker.drain(10)
    [msg] = events_tail.read(of_site(site), 1)
    assert decode(msg.value()).path == "/waits"
    assert mw.worker.stats["failed"] == 0


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("SITE_ID", "", "FOOTFALL_SITE_ID: required"),
        ("SITE_ID", "Not A Site", "FOOTFALL_SITE_ID: expected a site id"),
        ("KAFKA_BOOTSTRAP_SERVERS", "kafka", "FOOTFALL_KAFKA_BOOTSTRAP_SERVERS: expected comma-separated host:port"),
        ("REDIS_URL", "http://x", "FOOTFALL_REDIS_URL: expected a URL redis://"),
        ("TRACK", "everything", "FOOTFALL_TRACK: expected one of pageviews, requests"),
        ("SAMPLE_RATE", 0, "FOOTFALL_SAMPLE_RATE: expected a number in"),
    ],
)
def test_bad_settings_are_a_configuration_error_naming_them(settings, name: str, value: object, message: str) -> None:
    settings.FOOTFALL_SITE_ID = "a-site"
    setattr(settings, f"FOOTFALL_{name}", value)
    with pytest.raises(ImproperlyConfigured, match=message):
        ClickstreamMiddleware(host_view)


def test_a_disallowed_host_is_counted_not_raised_nor_sent(settings, site: Site, events_tail: TopicTail) -> None:
    """Host validation runs on the worker thread: a Host outside ALLOWED_HOSTS still makes
    no event and never reaches the host app's response."""
    mw = middleware(settings, site)
    assert mw(get("/bad", HTTP_HOST="evil.test")) is PAGE
    mw(get("/good"))
    assert mw.worker.drain(10)
    assert mw.worker.stats["failed"] == 1
    paths = [decode(m.value()).path for m in events_tail.read(of_site(site), 1, settle=1.0)]
    assert paths == ["/good"]


def test_forwarded_host_and_scheme_build_the_url(settings, site: Site, events_tail: TopicTail) -> None:
    """The URL is Django's build_absolute_uri() of the original request, proxy headers included."""
    settings.USE_X_FORWARDED_HOST = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    mw = middleware(settings, site)
    mw(get("/p?ref=1", HTTP_X_FORWARDED_HOST="example.com", HTTP_X_FORWARDED_PROTO="https", HTTP_HOST="internal"))
    [msg] = events_tail.read(of_site(site), 1)
    assert decode(msg.value()).url == "https://example.com/p?ref=1"


@pytest.mark.parametrize("proxy_header", [None, ("HTTP_X_FORWARDED_PROTO", "https")])
def test_the_scheme_is_djangos_for_the_request(settings, site: Site, events_tail: TopicTail, proxy_header) -> None:
    """The scheme is resolved on the worker thread from copied META values, by Django's own
    rules: the proxy header when SECURE_PROXY_SSL_HEADER names it and the request carries it,
    else the WSGI server's scheme; the header means nothing when the setting is off."""
    settings.SECURE_PROXY_SSL_HEADER = proxy_header
    mw = middleware(settings, site)
    requests = {
        "/tls": RequestFactory().get("/tls", secure=True, HTTP_HOST="example.com", REMOTE_ADDR=IP),
        "/plain": get("/plain"),
        "/proxied-tls": get("/proxied-tls", HTTP_X_FORWARDED_PROTO="https"),
        "/proxied-plain": RequestFactory().get(
            "/proxied-plain", secure=True, HTTP_HOST="example.com", REMOTE_ADDR=IP, HTTP_X_FORWARDED_PROTO="http"
        ),
    }
    expected = {path: request.scheme for path, request in requests.items()}  # Django's answer, asked directly
    for request in requests.values():
        mw(request)
    events = {e.path: e for e in (decode(m.value()) for m in events_tail.read(of_site(site), 4))}
    assert {path: e.url.split(":", 1)[0] for path, e in events.items()} == expected
    assert expected["/proxied-tls"] == ("https" if proxy_header else "http")  # the cases differ as meant
    assert expected["/proxied-plain"] == ("http" if proxy_header else "https")


@pytest.mark.parametrize("value", [("HTTP_X_FORWARDED_PROTO",), "HTTP_X_FORWARDED_PROTO", 443])
def test_a_malformed_proxy_ssl_header_is_refused_at_start(settings, site: Site, value: object) -> None:
    settings.SECURE_PROXY_SSL_HEADER = value
    with pytest.raises(ImproperlyConfigured, match="SECURE_PROXY_SSL_HEADER"):
        middleware(settings, site)
