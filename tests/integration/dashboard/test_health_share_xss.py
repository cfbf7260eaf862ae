"""Health panel, public share links and hostile strings, in a real browser."""

from __future__ import annotations

from playwright.sync_api import Browser, Page

from dashboard import messages
from tests.integration.dashboard.conftest import (
    PHONE,
    Accounts,
    Traffic,
    choose_dimension,
    click_row,
    eventually,
    number,
    open_tab,
    orm,
    sign_in,
    table,
    text,
)
from tests.integration.dashboard.traffic import XSS_MARK, XSS_PATHS, XSS_REFERRERS


def test_health_panel_shows_freshness_rollups_and_drift(browser: Browser, accounts: Accounts, traffic: Traffic) -> None:
    """Last event, consumer lag, the settled day's rollup and its recorded realtime-vs-batch drift."""
    tab = open_tab(browser)
    sign_in(tab, accounts.base_url, next_path=f"/dashboard/health?site={traffic.site}")
    page = tab.page
    page.wait_for_selector("#health-status:has-text('Checked')")
    assert text(page, "#health-last-event").endswith("ago")
    number(page, "#health-rt-lag")  # a number: Kafka answered
    number(page, "#health-invalid")
    rollups = table(page, "#health-rollups")
    assert [row[:2] for row in rollups] == [[traffic.days[0], "complete"]]
    drift = table(page, "#health-drift")
    assert drift[0][0] == traffic.days[0]
    assert page.is_hidden("#health-error")
    tab.screenshot("health")
    assert tab.errors == []


def test_share_link_is_read_only_and_revocable(browser: Browser, accounts: Accounts, traffic: Traffic) -> None:
    """A share link shows its site's live view without a login and no health panel; revoking it ends that."""
    tab = open_tab(browser, PHONE, is_mobile=True, has_touch=True)
    page = tab.page
    page.goto(f"{accounts.base_url}/dashboard/share/not-a-token")
    assert "does not work" in page.inner_text("body")

    page.goto(f"{accounts.base_url}/dashboard/share/{accounts.share_token}")
    page.wait_for_selector("#live-status:has-text('Updated')")
    assert number(page, "#live-pageviews") > 0
    assert "read-only" in text(page, ".who")
    assert page.is_hidden("#nav-health")
    assert [o.strip() for o in page.locator("#site").inner_text().splitlines() if o.strip()] == [
        f"{accounts.site.name} ({traffic.site})"
    ]
    page.goto(f"{accounts.base_url}/dashboard/health?site={traffic.site}")
    page.wait_for_selector(f"text={messages.HEALTH_SIGNED_IN}")
    tab.screenshot("share-phone")

    page.goto(f"{accounts.base_url}/dashboard/?site={traffic.site}")
    page.wait_for_selector("#live-status:has-text('Updated')")
    orm(accounts.share_link.revoke)
    page.locator("#live-error", has_text="share link was revoked").wait_for(timeout=20_000)  # the next refresh
    assert text(page, "#live-pageviews") == "—"
    page.reload()
    page.wait_for_selector("#no-sites")
    assert messages.SHARE_REVOKED in text(page, "#no-sites")
    assert tab.errors == []


def test_only_granted_sites_are_shown(browser: Browser, accounts: Accounts, traffic: Traffic) -> None:
    """A user granted no site sees the empty state, even when asking for a site by URL."""
    tab = open_tab(browser)
    sign_in(tab, accounts.base_url, username="bob", next_path=f"/dashboard/?site={traffic.site}")
    tab.page.wait_for_selector("#no-sites")
    assert "cannot see any site" in text(tab.page, "#no-sites")
    assert traffic.site not in tab.page.inner_text("body")


def test_script_payloads_in_urls_referrers_and_titles_do_not_run(
    browser: Browser, accounts: Accounts, traffic: Traffic
) -> None:
    """Paths, referrers and titles carrying script payloads show as text everywhere: nothing runs."""
    site = traffic.xss_site
    tab = open_tab(browser)
    sign_in(tab, accounts.base_url, next_path=f"/dashboard/?site={site}")
    page = tab.page
    page.wait_for_selector("#live-status:has-text('Updated')")
    eventually(lambda: _assert_has(table(page, "#live-top-pages"), XSS_PATHS))
    assert {row[0] for row in table(page, "#live-top-refs")} == {domain for _, domain in XSS_REFERRERS}
    # Plotly draws the Sankey after Dash has filled the tables: wait for its nodes too.
    eventually(lambda: _assert_sankey_shows_payload_as_text(page))
    page.locator("#live-flows .sankey-node").first.hover()  # hover labels render the values too
    tab.screenshot("xss-live")

    page.click("#nav-history")
    page.wait_for_selector("#hist-range-label:has-text('7 days')")
    eventually(lambda: _assert_has(table(page, "#hist-table"), XSS_PATHS))
    for dimension in ("referrers", "referrer_urls"):
        choose_dimension(page, dimension)
        page.wait_for_selector(f"#hist-table td:has-text('{XSS_MARK}')")
    javascript_referrer = page.locator("#hist-table td").filter(has_text=XSS_REFERRERS[0][0])
    click_row(page, javascript_referrer, "#hist-filter-label:has-text('javascript:')")
    tab.screenshot("xss-history")

    assert page.evaluate(f"window.{XSS_MARK}") is None, "a payload ran"
    assert tab.errors == [], "no alert() and no page error"
    assert page.evaluate("document.querySelectorAll('a[href^=\"javascript:\" i], [onerror], [onload]').length") == 0
    assert page.evaluate("window.__cspViolations") == [], "nothing even tried to run inline code"


def _assert_has(rows: list[list[str]], values: list[str]) -> None:
    assert set(values) <= {row[0] for row in rows}, rows


def _assert_sankey_shows_payload_as_text(page: Page) -> None:
    labels = page.eval_on_selector_all("#live-flows .sankey-node text", "els => els.map(e => e.textContent)")
    assert any("<svg/onload" in label for label in labels), labels
