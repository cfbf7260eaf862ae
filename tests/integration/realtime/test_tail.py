"""``manage.py tail`` over the real collector and Kafka: a beacon and a middleware-tracked page
are on screen within a second of being sent, refused events show with their reason, and the
tail leaves no consumer group and no offsets behind."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.test import Client, RequestFactory

from collector.runtime import get_ingestor
from footfall.config import Config
from footfall.models import Site
from footfall_capture.middleware import ClickstreamMiddleware
from tests.integration.collector.test_collect import CHROME, IP, beacon
from tests.integration.collector.test_middleware import host_view
from tests.integration.kafka_tail import tail_groups

# Committed (no test transaction): the tail's own process looks the site up.
pytestmark = pytest.mark.django_db(transaction=True)
REPO = Path(__file__).resolve().parents[3]
SHOWN_WITHIN_S = 1.0


def database_env() -> dict[str, str]:
    """This environment, with the tests' database (the site the tail looks up is there)."""
    return {**os.environ, "DATABASE_URL": f"sqlite:///{django_settings.DATABASES['default']['NAME']}"}


class Tail:
    """``manage.py tail ARGS`` in a process of its own; ``line()`` is its next line and when it came."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "tail", *args], cwd=REPO, env=database_env(),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
        )  # fmt: skip
        self.lines: queue.Queue[tuple[float, str]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        ready = self.process.stderr.readline()  # type: ignore[union-attr]
        assert ready.startswith("tailing"), ready + self.process.stderr.read()  # type: ignore[union-attr]

    def _read(self) -> None:
        for text in self.process.stdout:  # type: ignore[union-attr]
            self.lines.put((time.monotonic(), text.rstrip("\n")))

    def line(self, timeout: float = 15) -> tuple[float, str]:
        return self.lines.get(timeout=timeout)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
        self.process.wait(30)


@pytest.fixture
def tail_site() -> Site:
    site = Site.objects.create(site_id=f"tail-{uuid.uuid4().hex[:8]}", name="Tail", domains=["example.com"])
    get_ingestor().sites.invalidate()
    return site


def test_a_beacon_and_a_middleware_page_show_within_a_second(
    client: Client, settings, cfg: Config, tail_site: Site, tmp_path: Path
) -> None:
    # A host site's middleware (the Kafka transport: it enriches and produces itself).
    settings.FOOTFALL_KAFKA_BOOTSTRAP_SERVERS = cfg.kafka_bootstrap_servers
    settings.FOOTFALL_REDIS_URL = cfg.redis_url
    settings.FOOTFALL_SPOOL_DIR = str(tmp_path / "spool")
    settings.ALLOWED_HOSTS = ["example.com", "testserver"]  # the host's, and the test client's for the collector
    settings.FOOTFALL_SITE_ID = tail_site.site_id
    settings.FOOTFALL_DOMAINS = ["example.com"]
    mw = ClickstreamMiddleware(host_view)

    def page(path: str) -> None:
        mw(RequestFactory().get(path, HTTP_HOST="example.com", HTTP_USER_AGENT=CHROME, REMOTE_ADDR=IP))

    # Both producers connected, as in a running server: what is timed is the tail's part.
    assert beacon(client, {"site_id": tail_site.site_id, "url": "https://example.com/warm-up"}).status_code == 202
    page("/warm-up")
    tail = Tail("--site", tail_site.site_id, "--json", "--count", "2", "--path", "/t/*")
    try:
        sent = time.monotonic()
        body = {
            "site_id": tail_site.site_id,
            "url": "https://example.com/t/pricing",
            "referrer": "https://news.example/",
        }
        assert beacon(client, body).status_code == 202
        shown, text = tail.line()
        row = json.loads(text)
        print(f"\nbeacon on screen {shown - sent:.3f} s after it was sent")
        assert shown - sent <= SHOWN_WITHIN_S
        assert (row["type"], row["path"], row["referrer"], row["country"]) == ("pageview", "/t/pricing",
                                                                                "news.example", "GB")  # fmt: skip
        assert len(row["visitor"]) == 8
        assert IP not in text

        sent = time.monotonic()
        page("/t/docs")
        shown, text = tail.line()
        print(f"middleware page on screen {shown - sent:.3f} s after it was served")
        assert shown - sent <= SHOWN_WITHIN_S
        assert json.loads(text)["path"] == "/t/docs"
        tail.process.wait(30)
        assert tail.process.returncode == 0
    finally:
        mw.worker.drain(10)
        tail.stop()
    assert tail_groups(cfg) == []  # no group, so no committed offsets either


def test_refused_events_show_with_their_reason(client: Client, cfg: Config) -> None:
    site = Site.objects.create(site_id=f"tail-{uuid.uuid4().hex[:8]}", name="Any page", domains=[])
    get_ingestor().sites.invalidate()
    tail = Tail("--invalid", "--site", site.site_id, "--count", "1")
    try:
        response = beacon(client, {"site_id": site.site_id, "url": "javascript:alert(1)"})
        assert response.status_code == 400
        _, text = tail.line()
        assert site.site_id in text
        assert "refused: invalid_field" in text
    finally:
        tail.stop()
    assert tail_groups(cfg) == []


def test_bad_arguments_are_refused_with_the_reason() -> None:
    for args, message in (
        ([], "--site is required"),
        (["--site", "no-such-site"], "no site 'no-such-site'"),
        (["--site", "x", "--type", "bad type"], "is not an event type"),
    ):
        if args[:2] == ["--site", "x"]:
            Site.objects.get_or_create(site_id="x", defaults={"name": "X"})
        proc = subprocess.run([sys.executable, "manage.py", "tail", *args], cwd=REPO, env=database_env(),
                              capture_output=True, text=True, timeout=60)  # fmt: skip
        assert proc.returncode == 1
        assert message in proc.stderr, proc.stderr
