"""BeaconMiddleware: the beacon endpoints answered ahead of the middleware stack, with the same answers."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from collector.middleware import BeaconMiddleware
from footfall.models import Site
from footfall_capture.events import decode
from tests.integration.kafka_tail import TopicTail

CHROME = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
IP = "81.2.69.160"
COMPARED_HEADERS = (
    "Content-Type", "Content-Length", "Access-Control-Allow-Origin", "Access-Control-Allow-Methods", "Allow",
    "Cache-Control", "Retry-After",
)  # fmt: skip


@pytest.fixture
def clients(settings) -> tuple[Client, Client]:
    """(routed, fast): one client through the whole stack without BeaconMiddleware (Footfall's
    settings install it), one with it right after SecurityMiddleware."""
    beacon = "collector.middleware.BeaconMiddleware"
    stack = [m for m in settings.MIDDLEWARE if m != beacon]
    settings.MIDDLEWARE = stack
    routed = Client()
    routed.get("/footfall.js")  # loads its middleware chain now, from the settings as they are
    security = stack.index("django.middleware.security.SecurityMiddleware") + 1
    settings.MIDDLEWARE = [*stack[:security], beacon, *stack[security:]]
    return routed, Client()


def answers(client: Client, site: Site) -> list[tuple[int, str | None, dict[str, str]]]:
    body = {"site_id": site.site_id, "url": "https://example.com/a", "referrer": "https://t.co/x"}
    requests = [
        ("post", "/collect", json.dumps(body).encode(), {"HTTP_ORIGIN": "https://example.com"}),
        ("post", "/collect", b"{not json", {}),
        ("post", "/collect", b"", {}),
        ("post", "/collect", b'{"site_id": "no-such-site", "url": "https://e.com/"}', {}),
        ("post", "/collect", json.dumps({**body, "props": {"k": "v" * 70_000}}).encode(), {}),
        ("post", "/collect", json.dumps(body).encode(), {"HTTP_ORIGIN": "https://evil.test"}),
        ("post", "/collect", json.dumps(body).encode(), {"HTTP_DNT": "1"}),
        ("get", "/collect", None, {}),
        ("options", "/collect", None, {"HTTP_ORIGIN": "https://example.com"}),
        ("get", "/p.gif", None, {"QUERY_STRING": f"site_id={site.site_id}&url=https://example.com/px"}),
        ("get", "/p.gif", None, {"QUERY_STRING": "url=https://example.com/px"}),
    ]
    out = []
    for method, path, data, extra in requests:
        kwargs = {"REMOTE_ADDR": IP, "HTTP_USER_AGENT": CHROME, **extra}
        if method == "post":
            resp = client.post(path, data, content_type="text/plain", **kwargs)
        else:
            resp = getattr(client, method)(path, **kwargs)
        reason = None
        if resp["Content-Type"] == "application/json":
            doc = resp.json()
            reason = doc.get("error") or doc.get("reason") or doc.get("status")
        out.append((resp.status_code, reason, {h: resp[h] for h in COMPARED_HEADERS if h in resp}))
    return out


def test_same_answers_with_and_without_the_fast_path(clients: tuple[Client, Client], site: Site) -> None:
    routed, fast = clients
    assert "X-Frame-Options" in routed.get("/collect")  # the whole stack: XFrameOptionsMiddleware answered too
    expected = answers(routed, site)
    assert [status for status, _, _ in expected] == [202, 400, 400, 403, 413, 403, 202, 405, 204, 202, 400]
    assert answers(fast, site) == expected


def test_fast_path_events_reach_kafka(clients: tuple[Client, Client], site: Site, events_tail: TopicTail) -> None:
    _, fast = clients
    body = {"site_id": site.site_id, "url": "https://example.com/fast", "title": "Fast"}
    resp = fast.post("/collect", json.dumps(body), content_type="text/plain", REMOTE_ADDR=IP, HTTP_USER_AGENT=CHROME)
    assert resp.status_code == 202
    assert "X-Frame-Options" not in resp  # proof it skipped the rest of the stack (documented)
    [msg] = events_tail.read(lambda m: decode(m.value()).site_id == site.site_id, 1)
    event = decode(msg.value())
    assert (event.event_id, event.path, event.country) == (resp.json()["event_id"], "/fast", "GB")
    assert IP.encode() not in msg.value()


def test_host_and_user_agent_checks_are_kept(settings, clients: tuple[Client, Client], site: Site) -> None:
    """As CommonMiddleware would: a Host outside ALLOWED_HOSTS gets 400, a disallowed agent 403."""
    _, fast = clients
    body = json.dumps({"site_id": site.site_id, "type": "x"})
    assert fast.post("/collect", body, content_type="text/plain", HTTP_HOST="evil.test").status_code == 400
    settings.DISALLOWED_USER_AGENTS = [re.compile(r"BadBot")]
    assert fast.post("/collect", body, content_type="text/plain", HTTP_USER_AGENT="BadBot/1").status_code == 403


def test_other_paths_pass_through(clients: tuple[Client, Client]) -> None:
    _, fast = clients
    assert fast.get("/footfall.js").status_code == 200
    assert fast.get("/no-such-page").status_code == 404


def test_unrouted_beacon_views_are_not_served(settings) -> None:
    """A site whose URLconf does not route the beacon views gets every request passed through."""
    settings.ROOT_URLCONF = "api.urls"
    middleware = BeaconMiddleware(lambda request: None)  # type: ignore[arg-type, return-value]
    assert middleware._find_routes() == {}
