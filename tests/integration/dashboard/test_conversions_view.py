"""Goals, funnels, custom events and engagement in the history view, in a real browser, from
settled rollups loaded into the real Mongo-wire server (the documents the nightly job writes,
in the shapes of tests/integration/api/test_events_api.py and test_goals_api.py): the panels
show the REST API's numbers, and names and values from traffic stay text."""

from __future__ import annotations

import datetime as dt
import json
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Browser, Page
from pytest_django.live_server_helper import LiveServer

from dashboard import messages
from dashboard.models import SiteAccess
from dashboard.ranges import DayRange
from footfall.config import Config
from footfall.models import ApiKey, Funnel, Goal, Site
from footfall.vocabulary import PROP_SEPARATOR
from historical.store import GOAL_SOURCES, ROLLUP_COLLECTIONS, RUNS, DayDocuments, connect, load_day
from tests.integration.dashboard.conftest import (
    PASSWORD,
    Tab,
    choose_dimension,
    click_row,
    eventually,
    open_tab,
    orm,
    plot_data,
    sign_in,
    table,
    text,
)

XSS = "<img src=x onerror=alert(1)>"
DAYS = ("2026-10-01", "2026-10-02")  # settled, long before the realtime window
RANGE = DayRange(dt.date(2026, 10, 1), dt.date(2026, 10, 2))


def prop_doc(event: str, prop: str, value: str, events: int, visitors: int) -> dict:
    return {"dimension": "event_prop", "value": PROP_SEPARATOR.join((event, prop, value)), "event": event,
            "prop": prop, "prop_value": value, "pageviews": 0, "events": events, "visitors": visitors}  # fmt: skip


def source_doc(goal: Goal, dim: str, value: str, visitors: int, conversions: int) -> dict:
    return {"dimension": f"goal_src:{dim}", "value": f"{goal.pk}{PROP_SEPARATOR}{value}", "goal_id": str(goal.pk),
            "pageviews": 0, "visitors": visitors, "events": conversions}  # fmt: skip


@dataclass
class Api:
    """The REST API of the test's site, read with its read key (the numbers the panels must show)."""

    base_url: str
    site: str
    key: str

    def get(self, path: str, **params: object) -> dict:
        query = urllib.parse.urlencode(params)
        url = f"{self.base_url}/api/v1/sites/{self.site}/{path}?{query}"
        request = urllib.request.Request(url, headers={"Authorization": f"Bearer {self.key}"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read().decode())


@pytest.fixture
def settled(transactional_db: None, live_server: LiveServer, cfg: Config) -> Iterator[Api]:
    """A site with two goals and a funnel, two settled days of custom events, goals and
    engagement; alice (granted the site), carol (a superuser), dave (staff, no permissions)."""
    site = Site.objects.create(site_id=f"conv-{uuid.uuid4().hex[:8]}", name="Conversions", domains=["c.example"])
    pricing = Goal.objects.create(site=site, name="Pricing", kind="page", path="/pricing*")
    signup = Goal.objects.create(site=site, name="Pro signup", kind="event", event="signup", prop="plan", value="pro")
    Funnel.create(site, "Buy", [pricing.pk, signup.pk], window_minutes=60)
    users = get_user_model().objects
    SiteAccess.objects.create(user=users.create_user("alice", password=PASSWORD), site=site)
    users.create_superuser("carol", password=PASSWORD)
    users.create_user("dave", password=PASSWORD, is_staff=True)  # staff without the admin's view permissions
    key = ApiKey.issue(site, "conversions-test", ["read"])[1]
    api = Api(live_server.url, site.site_id, key)
    mongo, db = connect(cfg.mongo_url, cfg.mongo_db)
    for n, day in enumerate(DAYS):
        docs = [
            {"dimension": "event", "value": "signup", "pageviews": 0, "events": 10 + n, "visitors": 8},
            {"dimension": "event", "value": XSS, "pageviews": 0, "events": 30, "visitors": 3},
            prop_doc("signup", "plan", "pro", 6, 5),
            prop_doc("signup", "plan", XSS, 4 + n, 3),
            prop_doc("signup", "seats", "3", 2, 2),
            {"dimension": "goal", "value": str(pricing.pk), "pageviews": 0, "events": 7 - n, "visitors": 5 - n},
            {"dimension": "goal", "value": str(signup.pk), "pageviews": 0, "events": 6, "visitors": 5},
            {"dimension": "page", "value": "/pricing", "pageviews": 40, "visitors": 20, "engaged_ms": 120_000,
             "engagements": 30, "scroll_views": 20, "scroll_sum": 1100},
            {"dimension": "ref", "value": "news.example", "pageviews": 10, "visitors": 9, "engaged_ms": 61_500},
            # Where the Pricing goal's converting visitors came from (first session of the day).
            source_doc(pricing, "ref", "news.example", 3 - n, 4 - 2 * n),
            {"dimension": "goal_base:ref", "value": "news.example", "pageviews": 0, "visitors": 9},
            {"dimension": "goal_base:ref", "value": XSS, "pageviews": 0, "visitors": 2},
        ]  # fmt: skip
        if n == 0:
            docs.append(source_doc(pricing, "ref", XSS, 1, 1))
        goal_ids = [str(pricing.pk), str(signup.pk)]
        run = {"status": "complete", "tz": "UTC", "goal_ids": goal_ids, "goal_sources": GOAL_SOURCES}
        load_day(db, DayDocuments(site.site_id, day, {"pageviews": 40, "visitors": 20}, [], docs, run))
    try:
        yield api
    finally:
        for name in (*ROLLUP_COLLECTIONS, RUNS):
            db[name].delete_many({"site_id": site.site_id})
        mongo.close()


@pytest.fixture
def chrome(settled: Api, shared_browser: Browser) -> Browser:
    """The run's Chromium, for a test of the ``settled`` days."""
    return shared_browser


def open_history(browser: Browser, base_url: str, site: str, user: str = "alice") -> Tab:
    """The history view of ``site`` showing the two settled days (a custom range)."""
    tab = open_tab(browser)
    sign_in(tab, base_url, username=user, next_path=f"/dashboard/history?site={site}")
    page = tab.page
    page.wait_for_selector("#hist-range-label:has-text('7 days')")
    page.click("#hist-preset label:has-text('Custom')")
    for field, day in (("input.dash-datepicker-start-date", DAYS[0]), ("input.dash-datepicker-end-date", DAYS[1])):
        page.fill(field, day)
        page.keyboard.press("Enter")
    page.keyboard.press("Escape")
    page.wait_for_selector(f"#hist-range-label:has-text('{RANGE.label()}')")
    return tab


def test_goals_panel_equals_the_api_and_a_click_shows_a_goal_per_day(chrome: Browser, settled: Api) -> None:
    """Conversions, unique conversions and rate per goal as the API gives them; a click draws the days."""
    api, site = settled, settled.site
    tab = open_history(chrome, api.base_url, site)
    page = tab.page
    goals = api.get("goals", **RANGE.api_params())
    assert goals["visitors"] == 40
    # The revenue columns (revenue, average, per visitor) stay empty: these goals count none.
    want = [[g["name"], f"{g['events']:,}", f"{g['visitors']:,}", f"{g['conversion_rate'] * 100:.1f}%", "", "", ""]
            for g in goals["results"]]  # fmt: skip
    assert want[0] == ["Pricing", "13", "9", "22.5%", "", "", ""]
    eventually(lambda: _assert_equal([[r[0], *r[2:]] for r in table(page, "#hist-goals")], want))
    assert page.locator("#hist-goals-admin a").count() == 0, "links to the admin are for staff"

    click_row(page, page.locator("#hist-goals td").filter(has_text="Pricing"), "#hist-goal-title:has-text('Pricing')")
    traces = eventually(lambda: _drawn(page, "#hist-goal-series", 2))
    assert list(traces[0]["x"]) == list(DAYS)
    assert traces[0]["y"] == [7, 6]
    assert traces[1]["y"] == [5, 4]
    tab.screenshot("goals")
    assert tab.errors == []


def test_a_clicked_goal_filters_the_sources_table_by_it(chrome: Browser, settled: Api) -> None:
    """Clicking a goal shows where its converting visitors came from in the referrers table, as the
    API's goal-filtered breakdown gives it (a hostile referrer as text); the pages table says it is
    not filtered so; "Show all visitors" ends it."""
    api, site = settled, settled.site
    tab = open_history(chrome, api.base_url, site)
    page = tab.page
    choose_dimension(page, "referrers")
    pricing = next(g for g in api.get("goals", **RANGE.api_params())["results"] if g["name"] == "Pricing")
    body = api.get("breakdown/referrers", goal=pricing["goal_id"], **RANGE.api_params())
    want = [[r["value"], f"{r['visitors']:,}", f"{r['conversions']:,}", f"{r['conversion_rate'] * 100:.1f}%"]
            for r in body["results"]]  # fmt: skip
    assert want == [["news.example", "5", "6", "27.8%"], [XSS, "1", "1", "25.0%"]]
    click_row(page, page.locator("#hist-goals td").filter(has_text="Pricing"), "#hist-goal-label:has-text('Pricing')")
    eventually(lambda: _assert_equal(table(page, "#hist-table"), want))
    headers = " ".join(page.locator("#hist-table th").all_inner_texts())
    assert "Converting visitors" in headers
    assert "Conversion rate" in headers

    choose_dimension(page, "pages")
    eventually(lambda: _assert_equal("not filtered by the goal" in text(page, "#hist-table-note"), True))
    idle(page)  # a click while callbacks are in flight can be lost (see conftest.click_row)
    page.click("#hist-goal-clear")
    page.wait_for_selector("#hist-goal-bar", state="hidden")
    idle(page)
    choose_dimension(page, "referrers")
    eventually(lambda: _assert_equal(table(page, "#hist-table")[0][:3], ["news.example", "20", "18"]))
    tab.screenshot("goal-sources")
    assert tab.errors == []


def test_custom_events_show_events_and_properties_as_text(chrome: Browser, settled: Api) -> None:
    """The events tab counts events; a hostile event name and property value are shown as text;
    clicking an event shows its properties and their values, equal to the API's."""
    api, site = settled, settled.site
    tab = open_history(chrome, api.base_url, site)
    page = tab.page
    choose_dimension(page, "events")
    events = api.get("breakdown/events", limit=100, **RANGE.api_params())["results"]
    want = [[e["value"], f"{e['events']:,}", f"{e['visitors']:,}"] for e in events]
    assert want == [[XSS, "60", "6"], ["signup", "21", "16"]]
    eventually(lambda: _assert_equal(table(page, "#hist-table"), want))
    assert page.locator("#history-page img").count() == 0, "no markup from traffic"

    click_row(page, page.locator("#hist-table td").filter(has_text="signup"), "#hist-event-panel:not([hidden])")
    assert text(page, "#hist-event-name") == "signup"
    page.wait_for_selector("#hist-prop:has-text('plan')")
    values = api.get("events/signup/properties/plan", limit=100, **RANGE.api_params())["results"]
    want_values = [[v["value"], f"{v['events']:,}", f"{v['visitors']:,}"] for v in values]
    assert want_values == [["pro", "12", "10"], [XSS, "9", "6"]]
    eventually(lambda: _assert_equal(table(page, "#hist-prop-table"), want_values))

    page.click("#hist-prop")
    page.locator(".dash-dropdown-option").filter(has_text="seats").click()  # the options open outside #hist-prop
    eventually(lambda: _assert_equal(table(page, "#hist-prop-table"), [["3", "4", "4"]]))
    assert page.locator("#history-page img").count() == 0
    tab.screenshot("custom-events")
    assert page.evaluate("window.__dialogs.length") == 0
    assert tab.errors == []


def test_engagement_columns_of_pages_and_referrers(chrome: Browser, settled: Api) -> None:
    """Time on page and scroll depth per page, engaged time per referrer: the API's values with units."""
    api, site = settled, settled.site
    tab = open_history(chrome, api.base_url, site)
    page = tab.page
    pages = api.get("breakdown/pages", metrics="pageviews,visitors,time_on_page,scroll_depth",
                    **RANGE.api_params())["results"]  # fmt: skip
    assert pages == [{"value": "/pricing", "pageviews": 80, "visitors": 40, "time_on_page": 3.0,
                      "scroll_depth": 55.0}]  # fmt: skip
    eventually(lambda: _assert_equal(table(page, "#hist-table"), [["/pricing", "80", "40", "3.0 s", "55 %"]]))
    choose_dimension(page, "referrers")
    refs = api.get("breakdown/referrers", metrics="engaged_time", **RANGE.api_params())["results"]
    assert refs == [{"value": "news.example", "engaged_time": 123.0}]
    eventually(lambda: _assert_equal(table(page, "#hist-table"), [["news.example", "20", "18", "123.0 s"]]))
    assert tab.errors == []


def test_staff_get_admin_links_and_a_site_without_goals_says_how_to_define_them(chrome: Browser, settled: Api) -> None:
    """The funnel picker lists the site's funnels; staff who may view goals see links to this
    site's goals and funnels in the admin; an empty site tells each reader how to create them."""
    api, site = settled, settled.site
    tab = open_history(chrome, api.base_url, site, user="carol")
    page = tab.page
    page.wait_for_selector("#hist-funnel:has-text('Buy')")
    assert page.is_visible("#hist-funnel-chart")
    page.wait_for_selector("#hist-goals-admin a")
    links = page.eval_on_selector_all("#hist-goals-admin a", "as => as.map(a => a.getAttribute('href'))")
    assert links == [f"/admin/footfall_core/goal/?site__site_id__exact={site}", "/admin/footfall_core/goal/add/"]
    funnel_links = page.eval_on_selector_all("#hist-funnels-admin a", "as => as.map(a => a.getAttribute('href'))")
    assert funnel_links[0] == f"/admin/footfall_core/funnel/?site__site_id__exact={site}"
    page.goto(f"{api.base_url}{links[0]}")
    assert "Pricing" in page.inner_text("#result_list")  # the admin lists this site's goals

    empty = _orm_site("Empty")
    page.goto(f"{api.base_url}/dashboard/history?site={empty}")
    page.wait_for_selector("#hist-goals-empty:not([hidden])")
    said = text(page, "#hist-goals-empty")
    assert said.startswith(messages.NO_GOALS)
    assert "Django admin" in said
    assert f"POST /api/v1/sites/{empty}/goals" in said
    assert "manage scope" in said
    page.wait_for_selector("#hist-funnel-empty:not([hidden])")
    assert text(page, "#hist-funnel-empty").startswith(messages.NO_FUNNELS)
    assert page.is_hidden("#hist-funnel-chart"), "no blank chart under the empty state"
    tab.screenshot("goals-empty")
    assert tab.errors == []

    # Staff without the admin's view permissions: no links, the API way, no server command.
    other = open_tab(chrome)
    sign_in(other, api.base_url, username="dave", next_path=f"/dashboard/history?site={empty}")
    other.page.wait_for_selector("#hist-goals-empty:not([hidden])")
    said = text(other.page, "#hist-goals-empty")
    assert f"POST /api/v1/sites/{empty}/goals" in said
    assert "manage.py" not in said
    assert other.page.locator("#hist-goals-admin a").count() == 0
    assert other.errors == []


def _orm_site(name: str) -> str:
    site_id = f"empty-{uuid.uuid4().hex[:8]}"
    orm(lambda: Site.objects.create(site_id=site_id, name=name, domains=["e.example"]))
    return site_id


def idle(page: Page) -> None:
    """Wait until Dash has no callback in flight."""
    page.wait_for_function("() => !document.querySelector('[data-dash-is-loading]')", timeout=20_000)


def _drawn(page: Page, selector: str, traces: int) -> list[dict]:
    data = plot_data(page, selector)
    assert len(data) == traces
    return data


def _assert_equal(got: object, want: object) -> None:
    assert got == want
