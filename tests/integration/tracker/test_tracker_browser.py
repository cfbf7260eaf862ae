"""The browser tracker (collector/static/collector/footfall.js) in a real headless Chromium:
page views, SPA navigation, custom events, outbound links and downloads, event ids,
Do-Not-Track and the fetch fallback. Engaged time has its own module (test_engagement.py).

How the pages, the collector and Kafka are wired: see ``support.py`` in this package.
Chromium is Debian's package, driven by Playwright through ``executable_path``; Playwright
never downloads a browser.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from playwright.sync_api import Browser

from tests.integration.tracker.support import RECORD_BEACONS, TITLE, KafkaTail, TrackedSite, open_tab, open_tab_in

SCREENSHOT = Path(__file__).resolve().parents[3] / "artifacts" / "screenshots" / "tracker.png"


def types_sent(tail: KafkaTail) -> list[str]:
    """The types of the site's events after settling, engagement reports left out: a page left
    or navigated (SPA) after a second or more reports its engaged time (test_engagement.py)."""
    return [e.type for e in tail.settle() if e.type != "engagement"]


def test_page_view_on_load(browser: Browser, site: TrackedSite, kafka_events: KafkaTail) -> None:
    """Loading a page sends one page view (cross-origin, text/plain) with its URL and title and no referrer."""
    url = site.publish()
    tab = open_tab(browser, site, url)
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    tab.page.screenshot(path=str(SCREENSHOT), full_page=True)

    (view,) = kafka_events.wait_count("pageview", 1)
    assert view.url == url
    assert (view.host, view.path) == ("127.0.0.1", f"/{site.site_id}/")
    assert view.title == TITLE
    assert view.referrer is None
    assert view.ref_type == "direct"
    assert view.visitor_id
    assert len(kafka_events.settle()) == 1, "one page load must send exactly one event"
    (beacon,) = tab.beacons
    assert beacon.headers.get("content-type", "").startswith("text/plain")


def test_spa_navigation_sends_page_views(browser: Browser, site: TrackedSite, kafka_events: KafkaTail) -> None:
    """pushState/popstate to a new path send page views referred by the previous in-app URL; hash changes don't."""
    url = site.publish()
    pricing = f"{url}pricing"  # stored without ?plan=pro: the site keeps no such parameter
    tab = open_tab(browser, site, url)
    kafka_events.wait_count("pageview", 1)

    tab.page.evaluate("history.pushState({}, '', 'pricing?plan=pro'); document.title = 'Pricing'")
    views = kafka_events.wait_count("pageview", 2)
    assert (views[1].url, views[1].path, views[1].title) == (pricing, f"/{site.site_id}/pricing", "Pricing")
    assert (views[1].referrer, views[1].ref_type) == (url, "internal")

    tab.page.evaluate("history.replaceState({}, '', location.pathname + location.search + '#faq')")
    tab.page.evaluate("history.back()")  # popstate back to the first page
    views = kafka_events.wait_count("pageview", 3)
    assert (views[2].url, views[2].referrer, views[2].ref_type) == (url, pricing, "internal")
    assert types_sent(kafka_events) == ["pageview"] * 3, "a hash change must not send a page view"


def test_custom_events_with_props(browser: Browser, site: TrackedSite, kafka_events: KafkaTail) -> None:
    """footfall(name, props) sends a custom event with props; calls the stub queued before load are replayed."""
    url = site.publish(before='footfall("queued", {early: true, n: 1});')
    tab = open_tab(browser, site, url)
    tab.page.evaluate("footfall('signup', {plan: 'pro'})")

    kafka_events.wait_count("signup", 1)
    kafka_events.wait_count("queued", 1)
    (signup,) = kafka_events.of_type("signup")
    (queued,) = kafka_events.of_type("queued")
    assert signup.props == {"plan": "pro"}
    assert signup.url == url
    assert queued.props == {"early": True, "n": 1}
    assert len(kafka_events.wait_count("pageview", 1)) == 1


def test_outbound_link_clicks(browser: Browser, site: TrackedSite, kafka_events: KafkaTail) -> None:
    """With data-outbound, left and middle clicks on links to another host send "outbound"; in-page links don't."""
    url = site.publish(tracker={"outbound": "true"})
    tab = open_tab(browser, site, url)
    tab.page.click("#internal")
    tab.page.click("#outbound", button="middle")  # opens a background tab; this page stays
    with tab.page.expect_navigation(url=site.outbound_url):
        tab.page.click("#outbound")

    outbound = kafka_events.wait_count("outbound", 2)
    assert [e.props for e in outbound] == [{"url": site.outbound_url}] * 2
    assert all(e.url == url for e in outbound)
    assert sorted(types_sent(kafka_events)) == ["outbound", "outbound", "pageview"]


def test_goal_event_outbound_link_and_download(browser: Browser, site: TrackedSite, kafka_events: KafkaTail) -> None:
    """A goal event, an outbound click and file downloads each arrive as their event with the link's url."""
    url = site.publish(tracker={"outbound": "true", "downloads": "true"})
    tab = open_tab(browser, site, url)
    tab.page.evaluate("footfall('signup', {plan: 'pro'})")
    tab.page.click("#outbound", button="middle")
    tab.page.click("#not-a-file", button="middle")  # ".pdf" only in the query: no download
    tab.page.click("#zip", button="middle")  # the extension's case does not matter
    with tab.page.expect_navigation(url=f"{url}files/report.pdf?v=2"):
        tab.page.click("#pdf")

    (signup,) = kafka_events.wait_count("signup", 1)
    assert (signup.props, signup.url) == ({"plan": "pro"}, url)
    (outbound,) = kafka_events.wait_count("outbound", 1)
    assert outbound.props == {"url": site.outbound_url}
    downloads = kafka_events.wait_count("download", 2)
    assert sorted(e.props["url"] for e in downloads if e.props) == [
        f"{url}files/archive.ZIP",
        f"{url}files/report.pdf?v=2",
    ]
    assert all(e.url == url for e in downloads)
    assert sorted(types_sent(kafka_events)) == ["download", "download", "outbound", "pageview", "signup"]


def test_own_download_extensions(browser: Browser, site: TrackedSite, kafka_events: KafkaTail) -> None:
    """data-downloads="zip" tracks only .zip links, and outbound clicks stay off without data-outbound."""
    url = site.publish(tracker={"downloads": "zip"})
    tab = open_tab(browser, site, url)
    tab.page.click("#pdf", button="middle")
    tab.page.click("#outbound", button="middle")
    tab.page.click("#zip", button="middle")

    (download,) = kafka_events.wait_count("download", 1)
    assert download.props == {"url": f"{url}files/archive.ZIP"}
    assert sorted(e.type for e in kafka_events.settle()) == ["download", "pageview"]


def test_links_send_nothing_without_the_attributes(
    browser: Browser, site: TrackedSite, kafka_events: KafkaTail
) -> None:
    """Without data-outbound and data-downloads, clicks on outbound and file links send nothing."""
    url = site.publish()
    tab = open_tab(browser, site, url)
    tab.page.click("#outbound", button="middle")
    tab.page.click("#pdf", button="middle")
    tab.page.click("#zip", button="middle")
    with tab.page.expect_navigation(url=site.outbound_url):
        tab.page.click("#outbound")

    kafka_events.wait_count("pageview", 1)
    assert types_sent(kafka_events) == ["pageview"]


def test_event_id_is_client_generated_and_dedupes(browser: Browser, site: TrackedSite, kafka_events: KafkaTail) -> None:
    """The event_id on Kafka is the tracker's own UUIDv4, and re-posting the same body keeps that id."""
    url = site.publish()
    context = browser.new_context()
    context.add_init_script(RECORD_BEACONS)
    tab = open_tab_in(context, site, url)
    (view,) = kafka_events.wait_count("pageview", 1)
    assert len(tab.beacons) == 1
    # DevTools does not expose a Blob body, so the page's own record of it is read.
    (body,) = tab.page.evaluate("Promise.all(window.__sentBeacons.map((blob) => blob.text()))")
    sent_id = json.loads(body)["event_id"]
    assert uuid.UUID(sent_id).version == 4, "the tracker mints v4 ids (the collector's own would be v7)"
    assert view.event_id == sent_id

    status, answer = tab.page.evaluate(
        """async ([endpoint, body]) => {
            const r = await fetch(endpoint, {method: "POST", body, credentials: "omit",
                                             headers: {"Content-Type": "text/plain"}});
            return [r.status, await r.json()];
        }""",
        [site.endpoint, body],
    )
    assert (status, answer["event_id"]) == (202, sent_id), answer
    kafka_events.wait_for("the re-posted event", lambda: len(kafka_events.events) >= 2)
    assert [e.event_id for e in kafka_events.settle()] == [sent_id, sent_id]


@pytest.mark.parametrize(
    ("header", "init_script"),
    [
        ("DNT", "Object.defineProperty(Navigator.prototype, 'doNotTrack', {get: () => '1', configurable: true})"),
        ("Sec-GPC", "Object.defineProperty(Navigator.prototype, 'globalPrivacyControl', {get: () => true})"),
    ],
    ids=["do-not-track", "global-privacy-control"],
)
def test_respect_dnt_sends_nothing(
    browser: Browser, site: TrackedSite, kafka_events: KafkaTail, header: str, init_script: str
) -> None:
    """With data-respect-dnt="true" a browser asking not to be tracked sends nothing at all (a control tab does)."""
    url = site.publish(respect_dnt=True, tracker={"outbound": "true", "downloads": "true"})
    context = browser.new_context(extra_http_headers={header: "1"})
    context.add_init_script(init_script)
    private = open_tab_in(context, site, url)
    assert private.page.evaluate("navigator.doNotTrack === '1' || navigator.globalPrivacyControl === true")
    private.page.evaluate("history.pushState({}, '', 'next'); footfall('signup', {plan: 'pro'})")
    private.page.click("#outbound", button="middle")
    private.page.click("#pdf", button="middle")

    control_url = site.publish(respect_dnt=True, name="control")
    control = open_tab(browser, site, control_url)
    (view,) = kafka_events.wait_count("pageview", 1)  # the pipeline works, for the control tab
    assert view.url == control_url
    assert [e.url for e in kafka_events.settle()] == [control_url]
    assert len(control.beacons) == 1
    assert private.beacons == [], f"the tracker sent beacons despite {header}: {[r.url for r in private.beacons]}"


def test_fetch_fallback_when_send_beacon_refuses(browser: Browser, site: TrackedSite, kafka_events: KafkaTail) -> None:
    """When sendBeacon returns false the event still arrives, via fetch(keepalive) as text/plain."""
    url = site.publish()
    context = browser.new_context()
    context.add_init_script("Navigator.prototype.sendBeacon = () => false")
    tab = open_tab_in(context, site, url)
    (view,) = kafka_events.wait_count("pageview", 1)
    (request,) = tab.beacons
    assert request.resource_type == "fetch"
    assert request.headers.get("content-type", "").startswith("text/plain")
    assert request.post_data is not None
    assert json.loads(request.post_data)["event_id"] == view.event_id
