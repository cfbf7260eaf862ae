"""User-Agent steps: browser/OS/device from real User-Agent strings, and bot detection."""

from __future__ import annotations

import pytest

from footfall_capture.enrich.pipeline import Drop, DropReason, SiteContext
from footfall_capture.enrich.useragent import MAX_UA_LENGTH, detect_bot, parse_user_agent
from footfall_capture.events import UserAgent
from tests.unit.enrich.drafts import (
    BINGBOT,
    CHROME_ANDROID_PHONE,
    CHROME_ANDROID_TABLET,
    CHROME_OS,
    CHROME_WINDOWS,
    CTX,
    CURL,
    FIREFOX_LINUX,
    GOOGLEBOT,
    GOOGLEBOT_SMARTPHONE,
    HEADLESS_CHROME,
    KINDLE_FIRE,
    PYTHON_REQUESTS,
    SAFARI_IPAD,
    SAFARI_IPHONE,
    SAFARI_MAC,
    SAMSUNG_TABLET,
    SMART_TV,
    make_draft,
)

DROP_BOTS = SiteContext(site_id="shop", drop_bots=True, salt=b"s")


def parsed(user_agent: str) -> UserAgent | None:
    return parse_user_agent(make_draft(user_agent=user_agent), CTX).ua


def flagged(user_agent: str, ctx: SiteContext = CTX) -> UserAgent | None:
    return detect_bot(parse_user_agent(make_draft(user_agent=user_agent), ctx), ctx).ua


@pytest.mark.parametrize(
    ("user_agent", "expected"),
    [
        (CHROME_WINDOWS, UserAgent(browser="Chrome", browser_version="131.0", os="Windows", device="desktop")),
        (SAFARI_MAC, UserAgent(browser="Safari", browser_version="17.5", os="Mac OS X", device="desktop")),
        (FIREFOX_LINUX, UserAgent(browser="Firefox", browser_version="133.0", os="Linux", device="desktop")),
        (CHROME_OS, UserAgent(browser="Chrome", browser_version="131.0", os="Chrome OS", device="desktop")),
        (SAFARI_IPHONE, UserAgent(browser="Mobile Safari", browser_version="17.5", os="iOS", device="mobile")),
        (
            CHROME_ANDROID_PHONE,
            UserAgent(browser="Chrome Mobile", browser_version="131.0", os="Android", device="mobile"),
        ),
        (SAFARI_IPAD, UserAgent(browser="Mobile Safari", browser_version="17.5", os="iOS", device="tablet")),
        (CHROME_ANDROID_TABLET, UserAgent(browser="Chrome", browser_version="131.0", os="Android", device="tablet")),
        (SAMSUNG_TABLET, UserAgent(browser="Samsung Internet", browser_version="23.0", os="Android", device="tablet")),
        (KINDLE_FIRE, UserAgent(browser="Amazon Silk", browser_version="130.4", os="Android", device="tablet")),
        (SMART_TV, UserAgent(browser="Samsung Internet", browser_version="4.0", os="Tizen", device="other")),
        (GOOGLEBOT, UserAgent(browser="Googlebot", browser_version="2.1", device="bot")),
    ],
)
def test_browsers_are_parsed(user_agent: str, expected: UserAgent) -> None:
    """Browser family, major.minor version, OS family and device class per real User-Agent."""
    assert parsed(user_agent) == expected


def test_empty_user_agent_is_other() -> None:
    """No User-Agent header gives an otherwise empty UserAgent with device "other"."""
    assert parsed("") == UserAgent(device="other")


def test_unknown_user_agent_is_other() -> None:
    """A User-Agent ua-parser does not know has no browser and device "other"."""
    assert parsed("SomethingNobodyKnows") == UserAgent(device="other")


def test_huge_user_agent_is_cut_before_parsing() -> None:
    """A megabyte header parses like its first MAX_UA_LENGTH characters."""
    huge = CHROME_WINDOWS + " x" * 500_000
    assert parsed(huge) == parsed(huge[:MAX_UA_LENGTH])


def test_parse_results_are_cached() -> None:
    """A repeated User-Agent returns the very same (immutable) UserAgent object."""
    assert parsed(FIREFOX_LINUX) is parsed(FIREFOX_LINUX)


@pytest.mark.parametrize(
    "user_agent",
    [
        GOOGLEBOT,
        GOOGLEBOT_SMARTPHONE,
        BINGBOT,
        HEADLESS_CHROME,
        CURL,
        PYTHON_REQUESTS,
        "Wget/1.21.4",
        "Go-http-client/2.0",
        "node-fetch/1.0 (+https://github.com/bitinn/node-fetch)",
        "axios/1.7.2",
        "okhttp/4.12.0",
        "Java/17.0.2",
        "libwww-perl/6.72",
        "Scrapy/2.11.2 (+https://scrapy.org)",
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 "
        "Safari/537.36 Puppeteer",
        "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
        "",
    ],
)
def test_bots_are_flagged(user_agent: str) -> None:
    """Crawlers, headless browsers, HTTP libraries and an empty User-Agent are bots."""
    ua = flagged(user_agent)
    assert ua is not None
    assert (ua.is_bot, ua.device) == (True, "bot")


@pytest.mark.parametrize(
    "user_agent",
    [
        CHROME_WINDOWS,
        SAFARI_IPHONE,
        SAFARI_IPAD,
        CHROME_ANDROID_PHONE,
        CHROME_ANDROID_TABLET,
        FIREFOX_LINUX,
        SAFARI_MAC,
    ],
)
def test_browsers_are_not_bots(user_agent: str) -> None:
    """Real browsers keep is_bot False and their device class."""
    ua = flagged(user_agent)
    assert ua == parsed(user_agent)
    assert ua is not None
    assert not ua.is_bot


def test_bot_keeps_its_browser_family() -> None:
    """A flagged bot still says which crawler it is."""
    ua = flagged(HEADLESS_CHROME)
    assert ua is not None
    assert (ua.browser, ua.os) == ("HeadlessChrome", "Linux")


@pytest.mark.parametrize("user_agent", [GOOGLEBOT, CURL, ""])
def test_bots_are_dropped_when_the_site_asks(user_agent: str) -> None:
    """With drop_bots a bot raises Drop(BOT)."""
    with pytest.raises(Drop) as caught:
        flagged(user_agent, DROP_BOTS)
    assert caught.value.reason is DropReason.BOT


def test_browsers_pass_when_bots_are_dropped() -> None:
    """drop_bots leaves people alone."""
    assert flagged(CHROME_WINDOWS, DROP_BOTS) == parsed(CHROME_WINDOWS)


def test_detect_bot_works_without_parse_user_agent() -> None:
    """detect_bot builds the UserAgent itself when no earlier step did."""
    ua = detect_bot(make_draft(user_agent=BINGBOT), CTX).ua
    assert ua == UserAgent(browser="bingbot", browser_version="2.0", device="bot", is_bot=True)
