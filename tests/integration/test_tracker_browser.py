"""The browser tracker (collector/static/collector/footfall.js) in a real headless Chromium.

A host page is served from its own local port (so every beacon is cross-origin, as on a
real site) and loads ``/footfall.js`` from pytest-django's live server, which runs the
whole collector: ``POST /collect`` → enrichment → the Kafka producer. Each test reads what
reached the ``events`` topic, starting at the end offsets taken before the browser acts and
keeping only its own site's events (every test registers a fresh site id).

Chromium is Debian's package, driven by Playwright through ``executable_path``; Playwright
never downloads a browser. Playwright's sync API runs an event loop in this thread, so all
ORM work (creating the site, flushing the database) happens before the browser starts and
after it stops: the ``browser`` fixture depends on ``site`` for exactly that reason.
"""

from __future__ import annotations

import html
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from string import Template

import pytest
from confluent_kafka import Consumer, TopicPartition
from playwright.sync_api import Browser, BrowserContext, Page, Request
from pytest_django.live_server_helper import LiveServer

from collector.runtime import get_ingestor
from footfall.config import Config
from footfall.kafka_client import consumer_config
from footfall.models import Site
from footfall_capture.events import Event, InvalidEvent, decode
from tests.integration.chromium import chromium

WAIT_S = 30.0  # the bound of every wait for an event on Kafka
SETTLE_S = 1.5  # how long to keep listening for events that must *not* arrive
PAGE_TEMPLATE = Template((Path(__file__).parent / "browser" / "page.html").read_text(encoding="utf-8"))
# Test instrumentation: keep what the tracker hands to sendBeacon (then send it as usual).
RECORD_BEACONS = """(() => {
    const send = navigator.sendBeacon.bind(navigator);
    window.__sentBeacons = [];
    navigator.sendBeacon = (url, data) => { window.__sentBeacons.push(data); return send(url, data); };
})();"""
SCREENSHOT = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots" / "tracker.png"
TITLE = "Footfall tracker test"

# --- the host page's server -------------------------------------------------------------


class PageServer:
    """Serves registered HTML pages (and an "outside" page for any host) from 127.0.0.1 on a
    free port, in a background thread."""

    def __init__(self) -> None:
        pages: dict[str, bytes] = {}
        self.pages = pages

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                body = pages.get(path)
                if body is None and path == "/outside":
                    body = b"<!doctype html><title>Outside</title><p>Another site."
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body or b"")))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)  # port 0: the OS picks a free one
        self.port = int(self.httpd.server_address[1])
        self.origin = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="tracker-page-server", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=10)


@pytest.fixture(scope="module")
def page_server() -> Iterator[PageServer]:
    server = PageServer()
    yield server
    server.close()


# --- the site and its pages -----------------------------------------------------------------


@dataclass
class TrackedSite:
    """A freshly registered site whose pages live on the page server and whose tracker and
    collector are the live server's."""

    site_id: str
    collector: str  # the live server's base URL
    pages: PageServer

    @property
    def endpoint(self) -> str:
        return f"{self.collector}/collect"

    @property
    def outbound_url(self) -> str:
        """A link target on another host than the page's (localhost vs 127.0.0.1)."""
        return f"http://localhost:{self.pages.port}/outside"

    def publish(self, *, respect_dnt: bool = False, before: str = "", name: str = "") -> str:
        """Register the test page at ``/<site_id>/<name>`` and return its URL."""
        attrs = {"src": f"{self.collector}/footfall.js", "data-site": self.site_id}
        if respect_dnt:
            attrs["data-respect-dnt"] = "true"
        tag = "<script defer " + " ".join(f'{k}="{html.escape(v)}"' for k, v in attrs.items()) + "></script>"
        path = f"/{self.site_id}/{name}"
        page = PAGE_TEMPLATE.substitute(
            title=html.escape(TITLE), before=before, script=tag, outbound=html.escape(self.outbound_url)
        )
        self.pages.pages[path] = page.encode()
        return f"{self.pages.origin}{path}"


@pytest.fixture
def site(transactional_db: None, live_server: LiveServer, page_server: PageServer) -> TrackedSite:
    """A new site (unique id) whose allowed origin is the page server's. Written through the
    ORM in a transactional test so the live server's thread sees the row."""
    site_id = f"tracker-{uuid.uuid4().hex[:12]}"
    Site.objects.create(
        site_id=site_id,
        name="Tracker browser test",
        domains=["localhost", "127.0.0.1"],
        allowed_origins=[page_server.origin],
    )
    get_ingestor().sites.invalidate()
    return TrackedSite(site_id=site_id, collector=live_server.url, pages=page_server)


# --- Kafka ------------------------------------------------------------------------------------


@dataclass
class KafkaTail:
    """One site's events on the events topic, from the end offsets at creation time on."""

    cfg: Config
    site_id: str
    events: list[Event] = field(default_factory=list)
    others: int = 0  # other sites' (or undecodable) records seen, for failure messages

    def __post_init__(self) -> None:
        self.topic = self.cfg.events_topic
        self.consumer = Consumer(consumer_config(self.cfg, f"tracker-browser-{uuid.uuid4().hex[:12]}"))
        meta = self.consumer.list_topics(self.topic, timeout=10)
        partitions = sorted(meta.topics[self.topic].partitions)
        assert partitions, f"topic {self.topic!r} has no partitions"
        starts = []
        for p in partitions:
            _low, high = self.consumer.get_watermark_offsets(TopicPartition(self.topic, p), timeout=10)
            starts.append(TopicPartition(self.topic, p, high))
        self.consumer.assign(starts)

    def _poll(self, timeout: float) -> None:
        msg = self.consumer.poll(timeout)
        while msg is not None:
            if msg.error() is None:
                try:
                    event = decode(msg.value())
                except InvalidEvent:
                    self.others += 1
                else:
                    if event.site_id == self.site_id:
                        self.events.append(event)
                    else:
                        self.others += 1
            msg = self.consumer.poll(0)

    def of_type(self, type_: str) -> list[Event]:
        return [e for e in self.events if e.type == type_]

    def wait_for(self, what: str, done: Callable[[], bool], timeout: float = WAIT_S) -> None:
        """Poll until ``done()``; fail after ``timeout`` seconds saying what was missing."""
        deadline = time.monotonic() + timeout
        while not done():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                got = [(e.type, e.url, e.props) for e in self.events]
                pytest.fail(
                    f"no {what} for site {self.site_id!r} on Kafka topic {self.topic!r} within {timeout:.0f}s; "
                    f"this site's events so far: {got} ({self.others} records of other sites seen)",
                    pytrace=False,
                )
            self._poll(min(0.5, remaining))

    def wait_count(self, type_: str, count: int, timeout: float = WAIT_S) -> list[Event]:
        """Wait for at least ``count`` events of ``type_`` and return them all (Kafka order)."""
        self.wait_for(f"{count} {type_!r} event(s)", lambda: len(self.of_type(type_)) >= count, timeout)
        return self.of_type(type_)

    def settle(self, seconds: float = SETTLE_S) -> list[Event]:
        """Keep reading for ``seconds`` (to catch events that should not be there); return all."""
        deadline = time.monotonic() + seconds
        while (remaining := deadline - time.monotonic()) > 0:
            self._poll(min(0.5, remaining))
        return self.events

    def close(self) -> None:
        self.consumer.close()


@pytest.fixture
def kafka_events(cfg: Config, site: TrackedSite) -> Iterator[KafkaTail]:
    """The site's events on Kafka; offsets are taken here, before any browser acts."""
    tail = KafkaTail(cfg, site.site_id)
    yield tail
    tail.close()


# --- the browser ------------------------------------------------------------------------------


@pytest.fixture
def browser(site: TrackedSite) -> Iterator[Browser]:
    """Debian's Chromium through Playwright (started after, and stopped before, the ORM work
    of ``site``: Playwright's event loop in this thread would make Django refuse queries)."""
    with chromium() as launched:
        yield launched


@dataclass
class Tab:
    """A page in its own browser context, with every beacon it sent to the collector."""

    context: BrowserContext
    page: Page
    beacons: list[Request]


def open_tab(browser: Browser, site: TrackedSite, url: str) -> Tab:
    """Open ``url`` in a fresh context, recording the POSTs to the collector's endpoint."""
    return open_tab_in(browser.new_context(), site, url)


def open_tab_in(context: BrowserContext, site: TrackedSite, url: str) -> Tab:
    """Open ``url`` in ``context`` (as the caller configured it), recording the beacons."""
    page = context.new_page()
    beacons: list[Request] = []
    context.on("request", lambda r: beacons.append(r) if r.method == "POST" and r.url == site.endpoint else None)
    response = page.goto(url, wait_until="load")
    assert response is not None, f"no response for the test page {url}"
    assert response.ok, f"the test page {url} did not load: HTTP {response.status}"
    # Deferred scripts run before "load": the real footfall() has replaced the queue stub.
    assert page.evaluate("typeof window.footfall === 'function' && !('q' in window.footfall)"), (
        "footfall.js did not load or did not install window.footfall"
    )
    return Tab(context, page, beacons)


# --- the tests ----------------------------------------------------------------------------------


def test_page_view_on_load(browser: Browser, site: TrackedSite, kafka_events: KafkaTail) -> None:
    """Loading a page sends one page view (cross-origin, text/plain) with its URL and title and no referrer."""
    url = site.publish()
    tab = open_tab(browser, site, url)
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    tab.page.screenshot(path=str(SCREENSHOT), full_page=True)

    (view,) = kafka_events.wait_count("pageview", 1)
    assert view.url == url
    assert (view.host, view.path) == ("127.0.0.1", f"/{site.site_id}/")
    assert view.title == TITLE
    assert view.referrer is None
    assert view.ref_type == "direct"
    assert view.visitor_id
    assert len(kafka_events.settle()) == 1, "one page load must send exactly one event"
    (beacon,) = tab.beacons
    assert beacon.headers.get("content-type", "").startswith("text/plain")


def test_spa_navigation_sends_page_views(browser: Browser, site: TrackedSite, kafka_events: KafkaTail) -> None:
    """pushState/popstate to a new path send page views referred by the previous in-app URL; hash changes don't."""
    url = site.publish()
    pricing = f"{url}pricing?plan=pro"
    tab = open_tab(browser, site, url)
    kafka_events.wait_count("pageview", 1)

    tab.page.evaluate("history.pushState({}, '', 'pricing?plan=pro'); document.title = 'Pricing'")
    views = kafka_events.wait_count("pageview", 2)
    assert (views[1].url, views[1].path, views[1].title) == (pricing, f"/{site.site_id}/pricing", "Pricing")
    assert (views[1].referrer, views[1].ref_type) == (url, "internal")

    tab.page.evaluate("history.replaceState({}, '', location.pathname + location.search + '#faq')")
    tab.page.evaluate("history.back()")  # popstate back to the first page
    views = kafka_events.wait_count("pageview", 3)
    assert (views[2].url, views[2].referrer, views[2].ref_type) == (url, pricing, "internal")
    assert [e.type for e in kafka_events.settle()] == ["pageview"] * 3, "a hash change must not send a page view"


def test_custom_events_with_props(browser: Browser, site: TrackedSite, kafka_events: KafkaTail) -> None:
    """footfall(name, props) sends a custom event with props; calls the stub queued before load are replayed."""
    url = site.publish(before='footfall("queued", {early: true, n: 1});')
    tab = open_tab(browser, site, url)
    tab.page.evaluate("footfall('signup', {plan: 'pro'})")

    kafka_events.wait_count("signup", 1)
    kafka_events.wait_count("queued", 1)
    (signup,) = kafka_events.of_type("signup")
    (queued,) = kafka_events.of_type("queued")
    assert signup.props == {"plan": "pro"}
    assert signup.url == url
    assert queued.props == {"early": True, "n": 1}
    assert len(kafka_events.wait_count("pageview", 1)) == 1


def test_outbound_link_clicks(browser: Browser, site: TrackedSite, kafka_events: KafkaTail) -> None:
    """Middle and left clicks on a link to another host send "outbound" events; an in-page link does not."""
    url = site.publish()
    tab = open_tab(browser, site, url)
    tab.page.click("#internal")
    tab.page.click("#outbound", button="middle")  # opens a background tab; this page stays
    with tab.page.expect_navigation(url=site.outbound_url):
        tab.page.click("#outbound")

    outbound = kafka_events.wait_count("outbound", 2)
    assert [e.props for e in outbound] == [{"url": site.outbound_url}] * 2
    assert all(e.url == url for e in outbound)
    assert sorted(e.type for e in kafka_events.settle()) == ["outbound", "outbound", "pageview"]


def test_event_id_is_client_generated_and_dedupes(browser: Browser, site: TrackedSite, kafka_events: KafkaTail) -> None:
    """The event_id on Kafka is the tracker's own UUIDv4, and re-posting the same body keeps that id."""
    url = site.publish()
    context = browser.new_context()
    context.add_init_script(RECORD_BEACONS)
    tab = open_tab_in(context, site, url)
    (view,) = kafka_events.wait_count("pageview", 1)
    assert len(tab.beacons) == 1
    # DevTools does not expose a Blob body, so the page's own record of it is read.
    (body,) = tab.page.evaluate("Promise.all(window.__sentBeacons.map((blob) => blob.text()))")
    sent_id = json.loads(body)["event_id"]
    assert uuid.UUID(sent_id).version == 4, "the tracker mints v4 ids (the collector's own would be v7)"
    assert view.event_id == sent_id

    status, answer = tab.page.evaluate(
        """async ([endpoint, body]) => {
            const r = await fetch(endpoint, {method: "POST", body, credentials: "omit",
                                             headers: {"Content-Type": "text/plain"}});
            return [r.status, await r.json()];
        }""",
        [site.endpoint, body],
    )
    assert (status, answer["event_id"]) == (202, sent_id), answer
    kafka_events.wait_for("the re-posted event", lambda: len(kafka_events.events) >= 2)
    assert [e.event_id for e in kafka_events.settle()] == [sent_id, sent_id]


@pytest.mark.parametrize(
    ("header", "init_script"),
    [
        ("DNT", "Object.defineProperty(Navigator.prototype, 'doNotTrack', {get: () => '1', configurable: true})"),
        ("Sec-GPC", "Object.defineProperty(Navigator.prototype, 'globalPrivacyControl', {get: () => true})"),
    ],
    ids=["do-not-track", "global-privacy-control"],
)
def test_respect_dnt_sends_nothing(
    browser: Browser, site: TrackedSite, kafka_events: KafkaTail, header: str, init_script: str
) -> None:
    """With data-respect-dnt="true" a browser asking not to be tracked sends nothing at all (a control tab does)."""
    url = site.publish(respect_dnt=True)
    context = browser.new_context(extra_http_headers={header: "1"})
    context.add_init_script(init_script)
    private = open_tab_in(context, site, url)
    assert private.page.evaluate("navigator.doNotTrack === '1' || navigator.globalPrivacyControl === true")
    private.page.evaluate("history.pushState({}, '', 'next'); footfall('signup', {plan: 'pro'})")
    private.page.click("#outbound", button="middle")

    control_url = site.publish(respect_dnt=True, name="control")
    control = open_tab(browser, site, control_url)
    (view,) = kafka_events.wait_count("pageview", 1)  # the pipeline works, for the control tab
    assert view.url == control_url
    assert [e.url for e in kafka_events.settle()] == [control_url]
    assert len(control.beacons) == 1
    assert private.beacons == [], f"the tracker sent beacons despite {header}: {[r.url for r in private.beacons]}"


def test_fetch_fallback_when_send_beacon_refuses(browser: Browser, site: TrackedSite, kafka_events: KafkaTail) -> None:
    """When sendBeacon returns false the event still arrives, via fetch(keepalive) as text/plain."""
    url = site.publish()
    context = browser.new_context()
    context.add_init_script("Navigator.prototype.sendBeacon = () => false")
    tab = open_tab_in(context, site, url)
    (view,) = kafka_events.wait_count("pageview", 1)
    (request,) = tab.beacons
    assert request.resource_type == "fetch"
    assert request.headers.get("content-type", "").startswith("text/plain")
    assert request.post_data is not None
    assert json.loads(request.post_data)["event_id"] == view.event_id
