"""Engaged time and scroll depth from the real tracker in headless Chromium, read back from Kafka.

Time: each tab runs on Playwright's fake clock (``page.clock``), paused from before the
page loads, so the tracker's ``Date.now()`` moves only when a test says ``run_for``; the
engaged milliseconds are then exact, and a 20 s wait takes no time. The beacons still go
to the real collector over the network, which stamps them with its own (real) time.

Visibility: headless Chromium never hides a page. Bringing a second tab to the front, a
tab opened in the same window through ``Target.createTarget`` and then activated, a window
minimised through ``Browser.setWindowBounds`` and ``Page.setWebLifecycleState`` all left
``document.visibilityState`` at "visible" with no ``visibilitychange`` (Chromium 156). So
:func:`hide` plays the browser's part the way it does it: the state the tracker reads turns
"hidden" and ``visibilitychange`` is dispatched on the document. One test instead leaves the
page by navigating, where Chromium fires its own ``visibilitychange`` and ``pagehide``.
Focus: Playwright emulates a focused page (``Emulation.setFocusEmulationEnabled``), so
``document.hasFocus()`` is true throughout, as for a visitor who keeps the window in front.
"""

from __future__ import annotations

import datetime as dt
import math

from playwright.sync_api import Browser, Page

from footfall_capture.events import Event
from tests.integration.tracker.support import RECORD_BEACONS, KafkaTail, Tab, TrackedSite, open_tab_in, sent_beacons

START = dt.datetime(2026, 3, 2, 9, 30, tzinfo=dt.UTC)  # where the fake clock stands still
VIEWPORT = {"width": 800, "height": 600}
TALL_PX = 4000  # a page well over the viewport's height, so scrolling changes the share seen
HIDE = """() => {
    Object.defineProperty(document, "visibilityState", {configurable: true, get: () => "hidden"});
    Object.defineProperty(document, "hidden", {configurable: true, get: () => true});
    document.dispatchEvent(new Event("visibilitychange"));
}"""
SHOW = """() => {
    delete document.visibilityState;  // the own properties HIDE defined; the prototype's answer again
    delete document.hidden;
    document.dispatchEvent(new Event("visibilitychange"));
}"""


def open_paused(browser: Browser, site: TrackedSite, url: str) -> Tab:
    """Open ``url`` with the page's clock installed and paused at :data:`START`."""
    context = browser.new_context(viewport=VIEWPORT)
    context.add_init_script(RECORD_BEACONS)
    context.clock.install(time=START)
    context.clock.pause_at(START)
    return open_tab_in(context, site, url)


def hide(page: Page) -> None:
    """Make the page hidden as a browser does when its tab goes to the background."""
    page.evaluate(HIDE)


def show(page: Page) -> None:
    """Bring a page hidden by :func:`hide` back to the front."""
    page.evaluate(SHOW)


def stay_active(page: Page, seconds: int) -> None:
    """Let ``seconds`` pass on the page's clock with a mouse move at the start of each second."""
    for step in range(seconds):
        page.mouse.move(100 + step, 100 + step)
        page.clock.run_for(1000)


def scroll_share(page: Page, top: int) -> int:
    """Scroll the document to ``top`` px (a new position) and return the share of it seen, in
    whole percent rounded half up, from the browser's own layout: (scroll position + viewport
    height) / document height. Returns once the scroll event has been dispatched."""
    page.evaluate(
        """(top) => new Promise((done) => {
            window.addEventListener("scroll", () => done(), {once: true});
            window.scrollTo(0, top);
        })""",
        top,
    )
    seen_px, client, height = page.evaluate(
        "() => { const s = document.scrollingElement; return [s.scrollTop, s.clientHeight, s.scrollHeight]; }"
    )
    assert seen_px == top, f"the page did not scroll to {top}px (at {seen_px}px of {height}px)"
    return math.floor(100 * (top + client) / height + 0.5)


def engagement_props(event: Event) -> dict[str, object]:
    assert event.props is not None, f"an engagement event without props: {event}"
    return dict(event.props)


def test_visible_five_seconds_then_hidden(browser: Browser, site: TrackedSite, kafka_events: KafkaTail) -> None:
    """5 s visible, focused and active, then hidden: one report of 5 s and the deepest share scrolled."""
    url = site.publish(height=TALL_PX)
    tab = open_paused(browser, site, url)
    (view,) = kafka_events.wait_count("pageview", 1)

    stay_active(tab.page, 2)
    deepest = scroll_share(tab.page, 1900)
    stay_active(tab.page, 3)
    assert scroll_share(tab.page, 300) < deepest  # scrolling back up keeps the deepest share
    hide(tab.page)

    (report,) = kafka_events.wait_count("engagement", 1)
    props = engagement_props(report)
    assert abs(int(props["engaged_ms"]) - 5000) <= 1000, props  # what the issue asks
    assert props == {"engaged_ms": 5000, "scroll_depth": deepest, "pageview_id": view.event_id}  # the clock is exact
    assert 0 < deepest < 100
    assert (report.url, report.path, report.referrer) == (view.url, view.path, None)
    assert (report.ref_type, report.visitor_id) == (view.ref_type, view.visitor_id)
    hide(tab.page)  # a second hidden signal with nothing new to report sends nothing
    assert [e.type for e in kafka_events.settle()] == ["pageview", "engagement"]


def test_short_engagement_waits_for_a_full_second(browser: Browser, site: TrackedSite, kafka_events: KafkaTail) -> None:
    """Under 1 s of new engaged time nothing is sent; the time is kept and reported with the next."""
    url = site.publish()
    tab = open_paused(browser, site, url)
    (view,) = kafka_events.wait_count("pageview", 1)

    tab.page.clock.run_for(600)
    hide(tab.page)
    assert [e.type for e in kafka_events.settle()] == ["pageview"], "a report of 600 ms must not be sent"
    assert len(tab.beacons) == 1

    tab.page.clock.run_for(30_000)  # hidden: none of this counts
    show(tab.page)
    stay_active(tab.page, 1)
    hide(tab.page)
    (report,) = kafka_events.wait_count("engagement", 1)
    # 100 % scrolled: the page is shorter than the viewport.
    assert engagement_props(report) == {"engaged_ms": 1600, "scroll_depth": 100, "pageview_id": view.event_id}


def test_idle_time_is_not_engaged(browser: Browser, site: TrackedSite, kafka_events: KafkaTail) -> None:
    """A visible page nobody touches counts only the 5 s after its last interaction (here, the load)."""
    url = site.publish()
    tab = open_paused(browser, site, url)
    kafka_events.wait_count("pageview", 1)

    tab.page.clock.run_for(20_000)
    tab.page.keyboard.press("Shift")  # active again: 2 s more until hidden
    tab.page.clock.run_for(2_000)
    hide(tab.page)
    (report,) = kafka_events.wait_count("engagement", 1)
    assert engagement_props(report)["engaged_ms"] == 5000 + 2000


def test_spa_navigation_reports_the_previous_page_first(
    browser: Browser, site: TrackedSite, kafka_events: KafkaTail
) -> None:
    """pushState sends the previous page's report (its URL and page view id) before the next page view."""
    url = site.publish(height=TALL_PX)
    tab = open_paused(browser, site, url)
    (first,) = kafka_events.wait_count("pageview", 1)
    stay_active(tab.page, 3)
    depth = scroll_share(tab.page, 1000)

    tab.page.evaluate("history.pushState({}, '', 'pricing')")
    tab.page.clock.run_for(1)  # the tracker looks at the new URL a tick later (a timer)
    views = kafka_events.wait_count("pageview", 2)
    # The order the tracker sent them in (the collector handles concurrent beacons in any order).
    assert [(b["type"], b["url"]) for b in sent_beacons(tab.page)] == [
        ("pageview", url),
        ("engagement", url),
        ("pageview", f"{url}pricing"),
    ]
    (report,) = kafka_events.wait_count("engagement", 1)
    assert engagement_props(report) == {"engaged_ms": 3000, "scroll_depth": depth, "pageview_id": first.event_id}
    assert (report.url, report.referrer) == (url, None)
    assert (views[1].url, views[1].referrer) == (f"{url}pricing", url)

    stay_active(tab.page, 2)  # the new page view's own engagement starts from zero
    hide(tab.page)
    reports = kafka_events.wait_count("engagement", 2)
    assert engagement_props(reports[1])["engaged_ms"] == 1 + 2000  # the 1 ms run to fire the timer is the new page's
    assert engagement_props(reports[1])["pageview_id"] == views[1].event_id
    assert (reports[1].url, reports[1].referrer, reports[1].ref_type) == (f"{url}pricing", url, "internal")


def test_leaving_the_page_sends_one_report(browser: Browser, site: TrackedSite, kafka_events: KafkaTail) -> None:
    """Navigating away fires Chromium's own visibilitychange and pagehide: exactly one report arrives."""
    url = site.publish()
    tab = open_paused(browser, site, url)
    (view,) = kafka_events.wait_count("pageview", 1)
    stay_active(tab.page, 2)

    tab.page.goto(site.outbound_url, wait_until="load")
    (report,) = kafka_events.wait_count("engagement", 1)
    assert engagement_props(report) == {"engaged_ms": 2000, "scroll_depth": 100, "pageview_id": view.event_id}
    assert [e.type for e in kafka_events.settle()] == ["pageview", "engagement"]


def test_manual_page_views_get_engagement(browser: Browser, site: TrackedSite, kafka_events: KafkaTail) -> None:
    """With data-auto="false" nothing is reported before a page view; then engagement follows the one sent."""
    url = site.publish(tracker={"auto": "false"})
    tab = open_paused(browser, site, url)
    stay_active(tab.page, 2)
    hide(tab.page)  # no page view yet: nothing to report on
    show(tab.page)
    tab.page.evaluate("footfall('pageview', {section: 'docs'})")
    (view,) = kafka_events.wait_count("pageview", 1)
    stay_active(tab.page, 3)
    hide(tab.page)

    (report,) = kafka_events.wait_count("engagement", 1)
    assert engagement_props(report)["pageview_id"] == view.event_id
    assert engagement_props(report)["engaged_ms"] == 3000
    assert [e.type for e in kafka_events.settle()] == ["pageview", "engagement"]
