"""Fixtures of the tracker's browser tests: a page server, a fresh site, its Kafka tail, Chromium.

Playwright's sync API runs an event loop in the test's thread, so all ORM work (creating
the site, flushing the database) happens before the browser starts and after it stops: the
``browser`` fixture depends on ``site`` for exactly that reason.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser
from pytest_django.live_server_helper import LiveServer

from collector.runtime import get_ingestor
from footfall.config import Config
from footfall.models import Site
from tests.integration.tracker.support import KafkaTail, PageServer, TrackedSite


@pytest.fixture(scope="module")
def page_server() -> Iterator[PageServer]:
    server = PageServer()
    yield server
    server.close()


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


@pytest.fixture
def kafka_events(cfg: Config, site: TrackedSite) -> Iterator[KafkaTail]:
    """The site's events on Kafka; offsets are taken here, before any browser acts."""
    tail = KafkaTail(cfg, site.site_id)
    yield tail
    tail.close()


@pytest.fixture
def browser(site: TrackedSite, shared_browser: Browser) -> Browser:
    """The run's Chromium, for a test of the tracker on ``site``'s pages."""
    return shared_browser
