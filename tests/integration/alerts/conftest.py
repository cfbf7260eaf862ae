"""Fixtures of the alert tests: sites with keys (read, and read + manage) in the test database;
for delivery tests a Celery worker on the test stack's Redis broker, an SMTP server (aiosmtpd)
and an HTTP receiver answering as scripted, all started by the test.

The worker runs in a thread of the test process, so it reads the same test database and
the settings a test overrides (the retry backoff); tests using it need
``django_db(transaction=True)``: the worker's connection sees only committed rows.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import queue
import ssl
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from aiosmtpd.controller import Controller
from celery.contrib.testing.worker import start_worker
from celery.signals import task_postrun
from django.test import Client

from alerts.models import SPIKE, WEBHOOK, AlertRule, Channel, Episode
from footfall.models import Site
from footfall_server.celery_app import app
from tests.integration.api.conftest import SiteKey, make_site, other_site_key, site_key  # noqa: F401 - fixtures
from tests.ports import free_port

FINAL_TIMEOUT_S = 60.0
OPENED = dt.datetime(2026, 11, 26, 14, 0, tzinfo=dt.UTC)


def spike_details(top_referrer: str = "news.ycombinator.com") -> dict:
    """``Episode.details`` of a spike as the checks write them (the contract's shape)."""
    series = [
        {"t": (OPENED - dt.timedelta(minutes=5 * i)).isoformat().replace("+00:00", "Z"), "v": 12 + (i < 6) * 150}
        for i in range(72)
    ]
    return {
        "summary": "Traffic spike on the site: 960 page views in the last 30 min against a usual 180, z-score 5.2 "
        "(alert at 3).",
        "metric": "z_score",
        "value": 5.2,
        "threshold": 3.0,
        "recent": 960,
        "usual": 180.0,
        "window_minutes": 30,
        "subject": "site",
        "top_referrers": [{"value": top_referrer, "visitors": 720}, {"value": "t.co", "visitors": 40}],
        "top_pages": [{"value": "/blog/launch", "visitors": 800}, {"value": "/", "visitors": 90}],
        "series": sorted(series, key=lambda p: p["t"]),
        "dashboard_path": "/dashboard/",
    }


def make_episode(channel: Channel, details: dict | None = None) -> Episode:
    """An open spike episode of a new rule delivering to ``channel``."""
    rule = AlertRule.objects.create(site=channel.site, name=f"Spike {uuid.uuid4().hex[:6]}", kind=SPIKE, threshold=3,
                                    window_minutes=30)  # fmt: skip
    rule.channels.add(channel)
    return Episode.objects.create(rule=rule, opened_at=OPENED, value=5.2, peak=5.2, details=details or spike_details())


@pytest.fixture
def site(transactional_db: None) -> Site:
    return Site.objects.create(site_id=f"al-{uuid.uuid4().hex[:8]}", name="Alerts test", timezone="Europe/Berlin")


def webhook_channel(site: Site, url: str, *, slack: bool = False) -> Channel:
    return Channel.objects.create(site=site, name=f"hook {uuid.uuid4().hex[:6]}", kind=WEBHOOK, url=url, slack=slack)


class Worker:
    """The in-thread worker, and the final (not retrying) outcome of each task it runs."""

    def __init__(self) -> None:
        self.finished: queue.Queue[tuple[str, str]] = queue.Queue()

    def on_postrun(self, task_id: str, state: str | None = None, **_: object) -> None:
        if state != "RETRY":
            self.finished.put((task_id, state or ""))

    def wait_final(self, count: int = 1) -> list[str]:
        """Block until ``count`` task runs ended other than by a retry; their states."""
        states = []
        deadline = time.monotonic() + FINAL_TIMEOUT_S
        while len(states) < count:
            try:
                states.append(self.finished.get(timeout=max(0.1, deadline - time.monotonic()))[1])
            except queue.Empty:
                pytest.fail(f"no task run ended within {FINAL_TIMEOUT_S:.0f}s")
        return states


@pytest.fixture
def worker(transactional_db: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[Worker]:
    """A real Celery worker (solo pool, in a thread) consuming the stack's broker."""
    monkeypatch.setenv("CELERY_SKIP_CHECKS", "1")  # Django's checks ran already; not again per worker
    with app.connection_for_write() as conn:
        conn.default_channel.queue_purge(app.conf.task_default_queue)  # no task left by an earlier run
    watcher = Worker()
    task_postrun.connect(watcher.on_postrun, weak=False)
    try:
        with start_worker(app, perform_ping_check=False, shutdown_timeout=30):
            yield watcher
    finally:
        task_postrun.disconnect(watcher.on_postrun)


@dataclass
class Received:
    """One request the HTTP receiver got."""

    headers: dict[str, str]
    body: bytes
    at: float


@dataclass
class Receiver:
    """An HTTP server answering each POST with the next scripted status (the last repeats)."""

    statuses: list[int]
    delays: list[float] = field(default_factory=list)  # seconds before answering request i
    url: str = ""
    server: ThreadingHTTPServer | None = None
    requests: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self) -> tuple[int, float]:
        """The status and the delay of the latest request's answer."""
        with self.lock:
            n = len(self.requests) - 1
            return self.statuses[min(n, len(self.statuses) - 1)], self.delays[n] if n < len(self.delays) else 0.0


@pytest.fixture
def allow_loopback(settings) -> None:
    """Webhooks may reach 127.0.0.0/8, as ``FOOTFALL_WEBHOOK_ALLOWED_NETWORKS=127.0.0.0/8`` says."""
    settings.ALERT_WEBHOOK_ALLOWED_NETWORKS = (ipaddress.ip_network("127.0.0.0/8"),)


@pytest.fixture
def receiver() -> Iterator[callable]:
    """``receiver(*statuses)`` starts an HTTP receiver on a free port of 127.0.0.1 (or on
    ``host`` and ``port``, over TLS with ``tls``); stopped afterwards. Loopback is refused to webhooks by default:
    tests that deliver to it allow it (see ``allow_loopback``)."""
    servers: list[ThreadingHTTPServer] = []

    def start(
        *statuses: int,
        delays: tuple[float, ...] = (),
        host: str = "127.0.0.1",
        port: int = 0,
        tls: ssl.SSLContext | None = None,
    ) -> Receiver:
        state = Receiver(list(statuses) or [204], list(delays))

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with state.lock:
                    state.requests.append(Received(dict(self.headers.items()), body, time.monotonic()))
                status, delay = state.answer()
                time.sleep(delay)
                self.send_response(status)
                if 300 <= status < 400:
                    self.send_header("Location", state.url + "elsewhere")
                # A refusal comes with a long explanation, of which the log keeps the start.
                answer = b"ok" if status < 300 else b"refused: " + b"x" * 100_000
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: object) -> None:  # quiet test output
                pass

        server = ThreadingHTTPServer((host, port or free_port()), Handler)
        if tls is not None:
            server.socket = tls.wrap_socket(server.socket, server_side=True)
        servers.append(server)
        state.server = server
        threading.Thread(target=server.serve_forever, daemon=True).start()
        state.url = f"{'https' if tls else 'http'}://{host}:{server.server_address[1]}/hook/"
        return state

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


class Mailbox:
    """aiosmtpd handler keeping each message it accepts; answers a recipient's first RCPTs
    with the replies it is given for that address (refusals), then accepts it."""

    def __init__(self, refuse: dict[str, list[str]] | None = None) -> None:
        self.messages: list[EmailMessage] = []
        self.refuse = refuse or {}

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options) -> str:
        if self.refuse.get(address):
            return self.refuse[address].pop(0)
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope) -> str:
        self.messages.append(message_from_bytes(envelope.content, policy=policy.default))
        return "250 Message accepted for delivery"


@pytest.fixture
def smtp(settings) -> Iterator[Mailbox]:
    """A local SMTP server, and Django's email settings pointed at it."""
    refusals = {"nobody@example.com": ["550 5.1.1 no such user"] * 10, "busy@example.com": ["451 4.3.0 try later"]}
    mailbox = Mailbox(refuse=refusals)
    controller = Controller(mailbox, hostname="127.0.0.1", port=free_port())
    controller.start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", controller.port
    settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    yield mailbox
    controller.stop()


@pytest.fixture
def manager(db: None) -> SiteKey:
    """A site and a key that may read and change its definitions."""
    return make_site(tz="UTC", scopes=("read", "manage"))


def send(client: Client, sk: SiteKey, method: str, path: str, body: object = None):
    """``method`` on ``/api/v1/sites/<sk's site>/<path>`` with ``sk``'s key and a JSON body."""
    data = json.dumps(body) if body is not None else ""
    return client.generic(
        method, f"/api/v1/sites/{sk.site.site_id}/{path}", data, content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {sk.key}",
    )  # fmt: skip
