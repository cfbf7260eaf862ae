"""Dashboard tests: generated traffic in the real stores, the whole Django project (with the
Dash app behind its login) on pytest-django's live server, Debian's Chromium via Playwright.

Traffic is counted once per module (:func:`traffic`). Sites, users, keys and share links are
rows of the test database, written per test before the browser starts: Playwright's sync
API runs an event loop in the test thread, and Django refuses ORM calls from such a thread
(:func:`orm` runs the few needed later in a worker thread).
"""

from __future__ import annotations

import datetime as dt
import json
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from django.contrib.auth import get_user_model
from django.db import connection
from playwright.sync_api import Browser, BrowserContext, Dialog, Locator, Page
from playwright.sync_api import Error as PlaywrightError
from pytest_django.live_server_helper import LiveServer

from dashboard.models import ShareLink, SiteAccess
from dashboard.tables import VALUE_TITLES
from footfall.config import Config
from footfall.models import ApiKey, Site
from footfall_capture.events import Event
from footfall_capture.kafka import client_config
from historical.store import connect
from tests.integration.dashboard import traffic as gen

SCREENSHOTS = Path(__file__).resolve().parents[3] / "artifacts" / "screenshots"
LAPTOP = {"width": 1366, "height": 860}
PHONE = {"width": 390, "height": 844}
TZ = "America/New_York"
PASSWORD = "correct horse battery staple 42"
T = TypeVar("T")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Dash 4 deprecates DataTable in favour of dash-ag-grid; dashboard/components.py explains the choice."""
    for item in items:
        if "dashboard" in item.path.parts:
            item.add_marker(pytest.mark.filterwarnings(r"ignore:\s*The dash_table.DataTable will be removed"))


@dataclass(frozen=True)
class Traffic:
    site: str  # ordinary demo-like traffic over three days, one of them settled
    xss_site: str  # page views carrying script payloads
    tz: str
    days: list[str]  # the site's local days, oldest first; days[0] is settled
    events: list[Event]


@pytest.fixture(scope="module")
def traffic(cfg: Config) -> Iterator[Traffic]:
    """Generated page views counted by the real realtime consumer; the oldest day settled."""
    now = dt.datetime.now(dt.UTC)
    run = uuid.uuid4().hex[:8]
    site, xss_site = f"dash-{run}", f"xss-{run}"
    events, days = gen.history_and_live(site, TZ, now)
    admin = AdminClient(client_config(cfg.kafka))
    topic = f"dash-{run}"
    admin.create_topics([NewTopic(topic, num_partitions=6, replication_factor=1)])[topic].result(timeout=30)
    client, db = connect(cfg.mongo_url, cfg.mongo_db)
    try:
        gen.count_realtime(cfg, topic, [*events, *gen.xss_events(xss_site, now)])
        gen.settle_day(cfg, db, site, TZ, days[0], events)
        yield Traffic(site, xss_site, TZ, days, events)
    finally:
        gen.forget(db, [site, xss_site])
        client.close()
        admin.delete_topics([topic])[topic].result(timeout=30)


@dataclass
class Accounts:
    """Rows of one test: the sites, a user granted both, one granted none, API keys, a share link."""

    base_url: str
    site: Site
    xss_site: Site
    keys: dict[str, str]  # site id -> read key
    share_token: str
    share_link: ShareLink

    def api(self, site_id: str, path: str, **params: object) -> dict:
        """The REST API's JSON answer (the numbers the dashboard must show)."""
        return json.loads(self.api_text(site_id, path, **params))

    def api_text(self, site_id: str, path: str, **params: object) -> str:
        query = urllib.parse.urlencode(params)
        url = f"{self.base_url}/api/v1/sites/{site_id}/{path}?{query}"
        request = urllib.request.Request(url, headers={"Authorization": f"Bearer {self.keys[site_id]}"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.read().decode()


@pytest.fixture
def accounts(transactional_db: None, live_server: LiveServer, traffic: Traffic) -> Accounts:
    """Written in a transactional test so the live server's thread sees the rows."""
    site = Site.objects.create(site_id=traffic.site, name="Dashboard test", domains=["demo.footfall.local"],
                               timezone=traffic.tz)  # fmt: skip
    xss_site = Site.objects.create(site_id=traffic.xss_site, name="XSS test", domains=["evil.example"])
    users = get_user_model().objects
    alice = users.create_user("alice", password=PASSWORD)
    users.create_user("bob", password=PASSWORD)  # signed in, but granted nothing
    for s in (site, xss_site):
        SiteAccess.objects.create(user=alice, site=s)
    keys = {s.site_id: ApiKey.issue(s, "dashboard-test", ["read"])[1] for s in (site, xss_site)}
    link, token = ShareLink.issue(site, "test")
    return Accounts(live_server.url, site, xss_site, keys, token, link)


def orm(fn: Callable[[], T]) -> T:
    """Run ORM work from a test whose thread runs Playwright's event loop."""

    def call() -> T:
        try:
            return fn()
        finally:
            connection.close()

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(call).result(timeout=30)


@pytest.fixture
def browser(accounts: Accounts, shared_browser: Browser) -> Browser:
    """The run's Chromium, for a test of the accounts' dashboard."""
    return shared_browser


WATCH = """(() => {
    window.__dialogs = [];
    window.__cspViolations = [];
    document.addEventListener('securitypolicyviolation', (e) => window.__cspViolations.push(e.violatedDirective));
})();"""


@dataclass
class Tab:
    context: BrowserContext
    page: Page
    errors: list[str]  # uncaught page errors and dialogs (alert/confirm/prompt)
    accept_dialogs: bool = False  # dialogs are dismissed unless a test expects to accept one

    def screenshot(self, name: str) -> None:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(SCREENSHOTS / f"dashboard-{name}.png"), full_page=True)


def open_tab(browser: Browser, viewport: dict[str, int] = LAPTOP, **options: object) -> Tab:
    context = browser.new_context(viewport=viewport, accept_downloads=True, **options)
    context.add_init_script(WATCH)
    page = context.new_page()
    page.set_default_timeout(45_000)  # a shared CI machine can be slow; these are bounds, not goals
    tab = Tab(context, page, [])
    page.on("pageerror", lambda exc: tab.errors.append(f"page error: {exc}"))

    def answer(dialog: Dialog) -> None:
        tab.errors.append(f"dialog: {dialog.message}")
        dialog.accept() if tab.accept_dialogs else dialog.dismiss()

    page.on("dialog", answer)
    return tab


def sign_in(tab: Tab, base_url: str, username: str = "alice", next_path: str = "/dashboard/") -> None:
    """Sign in through the login form, which sends the browser on to ``next_path``."""
    page = tab.page
    page.goto(f"{base_url}{next_path}")
    page.wait_for_url("**/dashboard/login/**")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/login/" not in url)


# -- reading the page ------------------------------------------------------------------------


def text(page: Page, selector: str) -> str:
    return page.locator(selector).inner_text().strip()


def number(page: Page, selector: str) -> int:
    return int(text(page, selector).replace(",", ""))


def table(page: Page, selector: str) -> list[list[str]]:
    """The visible rows of a DataTable, cell texts (header row left out)."""
    return page.eval_on_selector_all(
        f"{selector} tr",
        "rows => rows.map(r => Array.from(r.querySelectorAll('td')).map(td => td.innerText.trim()))"
        ".filter(cells => cells.length)",
    )


def plot_data(page: Page, selector: str) -> list[dict]:
    """The traces Plotly drew in the graph ``selector`` (AssertionError while it is not drawn
    yet: no plot, or the empty figure Dash draws before its callback has answered)."""
    plot = f"{selector} .js-plotly-plot"
    assert page.locator(plot).count() == 1, f"{plot} is not drawn (yet)"
    data = page.eval_on_selector(plot, "el => JSON.parse(JSON.stringify(el.data || []))")
    assert data, f"{plot} has no traces (yet)"
    return data


def choose_dimension(page: Page, key: str) -> None:
    """Pick a breakdown dimension and wait until the table shows it (its first column's title):
    until then the previous dimension's rows are still on screen."""
    title = VALUE_TITLES[key]
    for attempt in range(3):
        page.click(f"#hist-dim label:has(input[value={key}])")
        try:
            page.wait_for_function(
                "t => { const th = document.querySelector('#hist-table th'); return th && th.innerText.trim() === t; }",
                arg=title,
                timeout=20_000,
            )
            return
        except PlaywrightError:
            if attempt == 2:
                raise


def click_row(page: Page, cell: Locator, shows: str, attempts: int = 3) -> None:
    """Click a table cell until ``shows`` appears.

    A click waits until Dash has no callback in flight (a table being re-rendered can drop it,
    as it would for a person, who clicks again). A retry clicks the next cell of the same row:
    clicking the cell that is already active changes nothing, so Dash would not call back,
    while any cell of a row filters by that row. A click that never takes effect still fails."""
    for attempt in range(attempts):
        page.wait_for_function("() => !document.querySelector('[data-dash-is-loading]')", timeout=20_000)
        target = cell.first if attempt % 2 == 0 else cell.first.locator("xpath=following-sibling::td[1]")
        target.click()
        try:
            page.wait_for_selector(shows, timeout=20_000)
            return
        except PlaywrightError:
            if attempt == attempts - 1:
                raise


def eventually(check: Callable[[], T], timeout: float = 45.0, every: float = 1.0) -> T:
    """``check()``'s value once it stops raising AssertionError (the page refreshes on its own,
    and the realtime numbers move with the clock); its last failure after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return check()
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(every)
