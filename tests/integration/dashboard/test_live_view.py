"""The live view in a real browser shows exactly what the REST API answers for the same site."""

from __future__ import annotations

from playwright.sync_api import Browser

from tests.integration.dashboard.conftest import (
    PHONE,
    Accounts,
    Traffic,
    eventually,
    number,
    open_tab,
    plot_data,
    sign_in,
    table,
    text,
)
from tests.integration.dashboard.traffic import SURGE_PATH


def _rows(api_rows: list[dict]) -> list[list[str]]:
    return [[r["value"], f"{r['pageviews']:,}", f"{r['visitors']:,}"] for r in api_rows]


def test_live_view_equals_the_api(browser: Browser, accounts: Accounts, traffic: Traffic) -> None:
    """Concurrent visitors, totals, per-minute bars, top pages/referrers, rising list and flows equal /realtime."""
    tab = open_tab(browser)
    sign_in(tab, accounts.base_url, next_path=f"/dashboard/?site={traffic.site}")
    page = tab.page
    page.wait_for_selector("#live-status:has-text('Updated')")

    def same() -> dict:
        api = accounts.api(traffic.site, "realtime", minutes=30, limit=10)
        assert number(page, "#live-concurrent") == api["concurrent_visitors"]
        assert number(page, "#live-pageviews") == api["pageviews"]
        assert number(page, "#live-visitors") == api["visitors"]
        assert table(page, "#live-top-pages") == _rows(api["top_pages"])
        assert table(page, "#live-top-refs") == _rows(api["top_referrers"])
        bars = plot_data(page, "#live-ppm")[0]
        assert bars["y"] == [p["value"] for p in api["pageviews_per_minute"]]
        sankey = plot_data(page, "#live-flows")[0]
        assert sorted(sankey["link"]["value"]) == sorted(f["pageviews"] for f in api["flows"])
        rising = {(row[0], row[1]) for row in table(page, "#live-rising")}
        want = {("Page", r["value"]) for r in api["rising_pages"]} | {
            ("Referrer", r["value"]) for r in api["rising_referrers"]
        }
        assert rising <= want
        assert len(rising) == min(10, len(want))
        return api

    api = eventually(same)
    assert api["pageviews"] > 0, "the generated live traffic must show"
    assert api["concurrent_visitors"] > 0
    assert ("Page", SURGE_PATH) in {(r[0], r[1]) for r in table(page, "#live-rising")}, "the surge is rising"
    assert "America/New_York" in text(page, "#live-status")
    tab.screenshot("live")

    page.click("#live-minutes >> text=last 60 min")
    eventually(lambda: _check_60(page, accounts, traffic.site))
    assert tab.errors == []


def _check_60(page, accounts: Accounts, site: str) -> None:
    api = accounts.api(site, "realtime", minutes=60, limit=10)
    assert text(page, "#live-pageviews-sub") == "in the last 60 min"
    assert number(page, "#live-pageviews") == api["pageviews"]
    assert len(plot_data(page, "#live-ppm")[0]["y"]) == 60


def test_live_view_on_a_phone(browser: Browser, accounts: Accounts, traffic: Traffic) -> None:
    """On a phone-sized screen the page fits the width (no sideways scrolling) and shows the numbers."""
    tab = open_tab(browser, PHONE, is_mobile=True, has_touch=True)
    sign_in(tab, accounts.base_url, next_path=f"/dashboard/?site={traffic.site}")
    page = tab.page
    page.wait_for_selector("#live-status:has-text('Updated')")
    assert number(page, "#live-pageviews") > 0
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    tab.screenshot("live-phone")
    assert tab.errors == []
