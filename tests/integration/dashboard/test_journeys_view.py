"""The Journeys page in a real browser, over two settled days of journeys loaded into the real Mongo-wire
server (the documents the nightly job writes, from sessions computed in plain Python): each column
shows the REST API's options, a click on an option selects it and shows the step after, forwards
and backwards, and the figures equal the truth (tests/journey_truth.py)."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Browser, Page
from playwright.sync_api import Error as PlaywrightError
from pytest_django.live_server_helper import LiveServer

from dashboard.models import SiteAccess
from footfall.config import Config
from footfall.journeys import kept_length
from footfall.models import ApiKey, Site
from historical.journeys import journey_documents
from historical.store import ROLLUP_COLLECTIONS, RUNS, DayDocuments, connect, load_day
from tests.integration.dashboard.conftest import PASSWORD, eventually, open_tab, sign_in, text
from tests.journey_truth import journey, sessions
from tests.unit.query.test_journeys import DAY1, DAY2, hits

RANGE = {"from": DAY1, "to": "2026-11-04"}


@dataclass
class Api:
    base_url: str
    site: str
    key: str

    def journeys(self, start: str, path: tuple[str, ...] = (), direction: str = "next") -> dict:
        query = urllib.parse.urlencode({"start": start, "path": ",".join(path), "direction": direction, **RANGE})
        request = urllib.request.Request(
            f"{self.base_url}/api/v1/sites/{self.site}/journeys?{query}",
            headers={"Authorization": f"Bearer {self.key}"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read().decode())


@pytest.fixture
def settled(transactional_db: None, live_server: LiveServer, cfg: Config) -> Iterator[Api]:
    """A UTC site whose two days hold the sessions of :func:`tests.unit.query.test_journeys.hits`; alice may see it."""
    site = Site.objects.create(site_id=f"jr-{uuid.uuid4().hex[:8]}", name="Journeys", domains=["j.example"])
    SiteAccess.objects.create(user=get_user_model().objects.create_user("alice", password=PASSWORD), site=site)
    api = Api(live_server.url, site.site_id, ApiKey.issue(site, "journeys-test", ["read"])[1])
    mongo, db = connect(cfg.mongo_url, cfg.mongo_db)
    for day, found in sessions(hits(), "UTC").items():
        numbers = {v: n for n, v in enumerate(sorted({v for v, _ in found}), start=1)}
        rows = [{"visitor": numbers[v], "sessions": 1, "truncated": kept_length(s) < len(s),
                 "steps": s[: kept_length(s)]} for v, s in found]  # fmt: skip
        run = {"status": "complete", "tz": "UTC"}
        load_day(db, DayDocuments(site.site_id, day, {"pageviews": 1, "visitors": 1}, [], [], run,
                                  journeys=journey_documents(rows)))  # fmt: skip
    try:
        yield api
    finally:
        for name in (*ROLLUP_COLLECTIONS, RUNS):
            db[name].delete_many({"site_id": site.site_id})
        mongo.close()


def column(page: Page, step: int) -> list[tuple[str, str]]:
    options = page.locator(f"#jr-step-{step} .journey-option")
    return [
        (
            options.nth(n).locator(".journey-label").inner_text(),
            options.nth(n).locator(".journey-visitors").inner_text(),
        )
        for n in range(options.count())
    ]


def shown(body: dict, step: int) -> list[tuple[str, str]]:
    return [(o["label"], f"{o['visitors']:,}") for o in body["steps"][step - 1]["options"]]


def check(page: Page, api: Api, start: str, path: tuple[str, ...], direction: str) -> None:
    """The page's last column equals the API's, whose figures equal the truth."""
    body = api.journeys(start, path, direction)
    truth = journey(hits(), "UTC", [DAY1, DAY2], start, path, direction)
    assert {o["label"]: o["visitors"] for o in body["steps"][-1]["options"]} == truth["columns"][-1]
    want = shown(body, len(path) + 1)
    assert want, "the step has options"

    def same() -> None:
        # Reads that never wait: a column being re-rendered fails this try, and eventually() tries again.
        assert page.locator(".journey-column").count() == len(path) + 1
        assert column(page, len(path) + 1) == want
        for n, label in enumerate(path, start=1):
            assert page.locator(f"#jr-step-{n} .journey-option.selected .journey-label").all_inner_texts() == [label]

    eventually(same)


def click(page: Page, step: int, label: str, attempts: int = 3) -> None:
    """Click ``label`` in column ``step`` until it shows selected. Each click waits until Dash has no
    callback in flight: a column being re-rendered can drop a click, as it would for a person, who
    clicks again. A click that never takes effect still fails."""
    option = page.locator(f"#jr-step-{step} .journey-option").filter(has=page.get_by_text(label, exact=True))
    for attempt in range(attempts):
        page.wait_for_function("() => !document.querySelector('[data-dash-is-loading]')", timeout=20_000)
        option.click()
        try:
            page.wait_for_selector(f"#jr-step-{step + 1}", timeout=20_000)
            return
        except PlaywrightError:
            if attempt == attempts - 1:
                raise


def test_columns_equal_the_api_and_a_click_selects_the_next_step(settled: Api, shared_browser: Browser) -> None:
    """From page "/": step 1, a click on /pricing shows step 2, a click on signup step 3 with (exit);
    backwards to signup: (entrance) among the steps before, and a click goes one further back."""
    api = settled
    tab = open_tab(shared_browser)
    sign_in(tab, api.base_url, next_path=f"/dashboard/journeys?site={api.site}")
    page = tab.page
    page.wait_for_selector("#jr-start")
    for field, day in (("#jr-first", DAY1), ("#jr-last", DAY2)):
        page.fill(field, day)
        page.keyboard.press("Enter")
    check(page, api, "/", (), "next")
    assert "5 visitors reached /" in text(page, "#jr-caption")
    click(page, 1, "/pricing")
    check(page, api, "/", ("/pricing",), "next")
    click(page, 2, "signup")
    check(page, api, "/", ("/pricing", "signup"), "next")
    assert ("(exit)", "2") in column(page, 3)
    tab.screenshot("journeys")

    page.click("#jr-direction label:has-text('Steps before')")
    page.fill("#jr-start", "signup")
    page.keyboard.press("Enter")
    check(page, api, "signup", (), "previous")
    assert "(entrance)" in [label for label, _ in column(page, 1)]
    click(page, 1, "/pricing")
    check(page, api, "signup", ("/pricing",), "previous")
    assert tab.errors == []
