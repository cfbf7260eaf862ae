"""The installation check, on the dashboard's site page in Chromium and from ``manage.py check_site``:
"no event yet" for a new site, then the first event and its source after one page view, then
a refusal's reason after a beacon from a host the site does not list."""

from __future__ import annotations

import io
import json
import urllib.error
import urllib.request
import uuid

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from playwright.sync_api import Browser
from pytest_django.live_server_helper import LiveServer

from collector.runtime import get_ingestor
from collector.tracker_file import built_tracker
from dashboard.models import SiteAccess
from footfall.models import Site
from tests.integration.dashboard.conftest import PASSWORD, eventually, open_tab, orm, sign_in, text

CHROME = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"


def post(base_url: str, path: str, body: object, **headers: str) -> int:
    headers = {"Content-Type": "text/plain", "User-Agent": CHROME, **headers}
    request = urllib.request.Request(f"{base_url}{path}", json.dumps(body).encode(), headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def check_site(site_id: str) -> tuple[int, str]:
    """``manage.py check_site``'s exit status and output (its ORM work off Playwright's thread)."""

    def run() -> tuple[int, str]:
        out = io.StringIO()
        try:
            call_command("check_site", site_id, "--url", "https://stats.example.com", stdout=out, stderr=io.StringIO())
        except SystemExit as exc:
            return int(exc.code or 0), out.getvalue()
        return 0, out.getvalue()

    return orm(run)


@pytest.fixture
def site(transactional_db: None) -> Site:
    site = Site.objects.create(site_id=f"inst-{uuid.uuid4().hex[:8]}", name="Install", domains=["example.com"])
    get_ingestor().sites.invalidate()
    users = get_user_model().objects
    SiteAccess.objects.create(user=users.create_user("alice", password=PASSWORD), site=site)
    return site


def test_the_site_page_and_check_site_follow_a_new_installation(
    shared_browser: Browser, live_server: LiveServer, site: Site
) -> None:
    tab = open_tab(shared_browser)
    sign_in(tab, live_server.url, next_path=f"/dashboard/install?site={site.site_id}")
    page = tab.page
    page.wait_for_selector("#install-no-event")
    script = text(page, "#install-script")
    assert f'data-site="{site.site_id}"' in script
    assert f'integrity="{built_tracker().integrity}"' in script
    assert f'FOOTFALL_SITE_ID = "{site.site_id}"' in text(page, "#install-middleware")
    status, out = check_site(site.site_id)
    assert status == 1
    assert "No event yet." in out

    page_view = {"site_id": site.site_id, "url": "https://example.com/pricing"}
    assert post(live_server.url, "/collect", page_view, Origin="https://example.com") == 202
    first = eventually(lambda: text(page, "#install-first"), timeout=20)
    assert "from the tracker, page host example.com" in first
    status, out = check_site(site.site_id)
    assert status == 0
    assert "First event:" in out
    assert "from the tracker, page host example.com" in out

    elsewhere = {"site_id": site.site_id, "url": "https://copycat.example.net/pricing"}
    assert post(live_server.url, "/collect", elsewhere) == 403

    def refusal() -> str:
        found = text(page, "#install-refused")
        assert "page_host_not_allowed" in found
        return found

    assert "page host copycat.example.net" in eventually(refusal, timeout=20)
    status, out = check_site(site.site_id)
    assert "page_host_not_allowed from the tracker, page host copycat.example.net" in out
    assert "add it (create_site --domain)" in out
    tab.context.close()
