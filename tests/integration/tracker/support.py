"""What the tracker's browser tests share: the host pages' server, the site, the Kafka tail, tabs.

A host page is served from its own local port (so every beacon is cross-origin, as on a
real site) and loads ``/footfall.js`` from pytest-django's live server, which runs the
whole collector: ``POST /collect`` → enrichment → the Kafka producer. Each test reads what
reached the ``events`` topic, starting at the end offsets taken before the browser acts and
keeping only its own site's events (every test registers a fresh site id). The fixtures
that build these live in this package's ``conftest.py``.
"""

from __future__ import annotations

import html
import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from string import Template

import pytest
from confluent_kafka import Consumer, TopicPartition
from playwright.sync_api import Browser, BrowserContext, Page, Request

from footfall.config import Config
from footfall.kafka_client import consumer_config
from footfall_capture.events import Event, InvalidEvent, decode

WAIT_S = 30.0  # the bound of every wait for an event on Kafka
SETTLE_S = 1.5  # how long to keep listening for events that must *not* arrive
PAGE_TEMPLATE = Template((Path(__file__).parent / "page.html").read_text(encoding="utf-8"))
TITLE = "Footfall tracker test"
# Test instrumentation: keep what the tracker hands to sendBeacon (then send it as usual).
RECORD_BEACONS = """(() => {
    const send = navigator.sendBeacon.bind(navigator);
    window.__sentBeacons = [];
    navigator.sendBeacon = (url, data) => { window.__sentBeacons.push(data); return send(url, data); };
})();"""

# --- the host page's server -------------------------------------------------------------


class PageServer:
    """Serves registered HTML pages (and an "outside" page for any host, and a stand-in for any
    path under ``files/``, the test page's file links) from 127.0.0.1 on a free port, in a
    background thread."""

    def __init__(self) -> None:
        pages: dict[str, bytes] = {}
        self.pages = pages

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                body = pages.get(path)
                if body is None and path == "/outside":
                    body = b"<!doctype html><title>Outside</title><p>Another site."
                elif body is None and "/files/" in path:  # a 404 would abort the navigation to it
                    body = b"<!doctype html><title>A file</title><p>Stands in for a file."
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

    def publish(
        self,
        *,
        respect_dnt: bool = False,
        before: str = "",
        name: str = "",
        tracker: dict[str, str] | None = None,
        height: int = 0,
    ) -> str:
        """Register the test page at ``/<site_id>/<name>`` and return its URL. ``tracker`` adds
        ``data-<key>`` attributes to the script tag; ``height`` (px) makes the page that tall."""
        attrs = {"src": f"{self.collector}/footfall.js", "data-site": self.site_id}
        if respect_dnt:
            attrs["data-respect-dnt"] = "true"
        attrs.update({f"data-{key}": value for key, value in (tracker or {}).items()})
        tag = "<script defer " + " ".join(f'{k}="{html.escape(v)}"' for k, v in attrs.items()) + "></script>"
        path = f"/{self.site_id}/{name}"
        page = PAGE_TEMPLATE.substitute(
            title=html.escape(TITLE),
            before=before,
            script=tag,
            outbound=html.escape(self.outbound_url),
            height=str(height),
        )
        self.pages.pages[path] = page.encode()
        return f"{self.pages.origin}{path}"


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


# --- the browser ------------------------------------------------------------------------------


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


def sent_beacons(page: Page) -> list[dict[str, object]]:
    """The bodies the tracker handed to sendBeacon, in order (needs :data:`RECORD_BEACONS`;
    DevTools does not expose a Blob body, so the page's own record of it is read)."""
    bodies = page.evaluate("Promise.all(window.__sentBeacons.map((blob) => blob.text()))")
    return [json.loads(body) for body in bodies]
