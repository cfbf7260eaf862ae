"""The Alerts page in a real browser: a manager reads a site's rules and episodes and creates
a rule through the form (an error shows beside its field first); a viewer without the
permissions gets the lists and no form."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from playwright.sync_api import Browser, Page
from pytest_django.live_server_helper import LiveServer

from alerts.models import THRESHOLD_MEANING, AlertRule, Channel, Episode
from dashboard import messages
from dashboard.access import ALERT_PERMISSIONS
from dashboard.models import SiteAccess
from footfall.models import Site
from tests.integration.dashboard.conftest import PASSWORD, eventually, open_tab, orm, sign_in, table, text

XSS = "<img src=x onerror=alert(1)>"


@dataclass
class Setup:
    base_url: str
    site: Site


@pytest.fixture
def setup(transactional_db: None, live_server: LiveServer) -> Setup:
    """A site with a spike rule (open episode), a lag rule, a channel; ``manager`` holds
    every alert permission, ``viewer`` none; both are granted the site."""
    site = Site.objects.create(site_id="alerts-ui", name="Shop", domains=["s.example"], timezone="Europe/Paris")
    Site.objects.create(site_id="alerts-hidden", name="Hidden", domains=["h.example"])
    channel = Channel.objects.create(site=site, name="ops mail", kind="email", email="ops@s.example")
    rule = AlertRule.objects.create(site=site, name="Home spike", kind="spike", threshold=3, scope="page", value="/")
    rule.channels.set([channel])
    AlertRule.objects.create(site=site, name="Worker lag", kind="realtime_lag", threshold=120)
    Episode.objects.create(rule=rule, opened_at=dt.datetime.now(dt.UTC) - dt.timedelta(minutes=20), value=5, peak=7,
                           details={"summary": f"{XSS} sends a burst to /"})  # fmt: skip
    users = get_user_model().objects
    manager, viewer = users.create_user("manager", password=PASSWORD), users.create_user("viewer", password=PASSWORD)
    for perm in ALERT_PERMISSIONS:
        manager.user_permissions.add(Permission.objects.get(codename=perm.split(".")[1]))
    for account in (manager, viewer):
        SiteAccess.objects.create(user=account, site=site)
    return Setup(live_server.url, site)


@pytest.fixture
def browser(setup: Setup, shared_browser: Browser) -> Browser:
    return shared_browser


def test_a_manager_creates_a_rule_through_the_form(browser: Browser, setup: Setup) -> None:
    """The lists show the site's rules and episodes (traffic text as text); a rule without a
    threshold is refused beside that field, then stored and listed once it has one; deleting
    it asks first."""
    tab = open_tab(browser)
    sign_in(tab, setup.base_url, "manager", next_path=f"/dashboard/alerts?site={setup.site.site_id}")
    page = tab.page
    page.wait_for_selector("#alerts-rules td:has-text('Home spike')")
    assert [row[1] for row in table(page, "#alerts-rules")] == ["Home spike", "Worker lag"]
    assert table(page, "#alerts-open")[0][1] == f"{XSS} sends a burst to /"  # a cell's text, not markup
    assert page.locator("#alerts-page img").count() == 0
    assert "Hidden" not in page.inner_text("#alerts-page")

    # A spike rule's form: scope and value, no goal; an email channel's: no URL.
    assert page.is_hidden("#alerts-rule-field-goal")
    assert page.is_hidden("#alerts-channel-field-url")
    assert page.is_visible("#alerts-channel-field-email")
    page.fill("#alerts-rule-name", "News referrer spike")
    page.click("#alerts-rule-scope label:has-text('any referrer')")
    page.fill("#alerts-rule-value", "news.example")
    page.click("#alerts-rule-channels label:has-text('ops mail')")
    page.click("#alerts-rule-create")
    page.wait_for_selector("#alerts-rule-err-threshold:has-text('a number is required')")
    assert orm(lambda: AlertRule.objects.filter(name="News referrer spike").exists()) is False

    page.fill("#alerts-rule-threshold", "2.5")
    page.click("#alerts-rule-create")
    page.wait_for_selector("#alerts-rule-created:has-text('News referrer spike')")
    assert text(page, "#alerts-rule-err-threshold") == ""
    rows = eventually(lambda: _rows_with(page, "News referrer spike"))
    assert rows[0][3:7] == ["referrer news.example", "2.5 — " + THRESHOLD_MEANING["spike"], "60 min", "ops mail"]
    rule = orm(lambda: AlertRule.objects.prefetch_related("channels").get(name="News referrer spike"))
    assert (rule.scope, rule.value, rule.threshold, [c.name for c in rule.channels.all()]) == (
        "ref", "news.example", 2.5, ["ops mail"]
    )  # fmt: skip
    tab.screenshot("alerts")
    assert tab.errors == []

    # Deleting asks first: dismissed, the rule stays; accepted, the selected rule goes.
    asked = f"dialog: {messages.ALERTS_CONFIRM_DELETE['rule']}"
    page.locator("#alerts-rules tr:has-text('News referrer spike') input[type=checkbox]").check()
    page.click("#alerts-rule-delete")
    eventually(lambda: _said(tab.errors, [asked]))
    tab.errors.clear()
    tab.accept_dialogs = True
    page.click("#alerts-rule-delete")
    page.wait_for_selector("#alerts-act-result:has-text('1 rule deleted.')")
    assert orm(lambda: sorted(AlertRule.objects.filter(site=setup.site).values_list("name", flat=True))) == [
        "Home spike", "Worker lag"
    ]  # fmt: skip
    assert tab.errors == [asked]


def _said(seen: list[str], expected: list[str]) -> None:
    assert seen == expected, seen


def test_a_viewer_sees_the_lists_but_no_controls(browser: Browser, setup: Setup) -> None:
    """Without the permissions: the lists, the read-only note, no form and no action button."""
    tab = open_tab(browser)
    sign_in(tab, setup.base_url, "viewer", next_path=f"/dashboard/alerts?site={setup.site.site_id}")
    page = tab.page
    page.wait_for_selector("#alerts-rules td:has-text('Home spike')")
    assert text(page, "#alerts-error") == messages.ALERTS_READ_ONLY
    for hidden in ("#alerts-rule-form", "#alerts-channel-form", "#alerts-subscription-form", "#alerts-rule-delete"):
        assert page.is_hidden(hidden)
    tab.screenshot("alerts-viewer")
    assert tab.errors == []


def _rows_with(page: Page, name: str) -> list[list[str]]:
    """The rules table's rows naming ``name`` (AssertionError until the table shows one)."""
    rows = [r for r in table(page, "#alerts-rules") if name in r]
    assert rows, f"{name} is not listed yet"
    return rows
