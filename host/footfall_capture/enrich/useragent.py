"""User-Agent steps: browser, OS and device (:func:`parse_user_agent`), bots (:func:`detect_bot`).

Contracts:

* :func:`parse_user_agent` sets ``draft.ua`` to a :class:`~footfall_capture.events.UserAgent` from
  ``draft.user_agent`` with ua-parser: ``browser`` (family), ``browser_version``
  (``major[.minor]``), ``os`` (family) and ``device``, one of :data:`~footfall_capture.events.DEVICES`
  (see :func:`device_class`). An empty User-Agent gives ``UserAgent(device="other")``.
  The raw header is never copied into the event.
* :func:`detect_bot` runs after it: crawlerdetect's list plus :data:`AUTOMATION` (headless
  browsers, HTTP libraries and command-line clients that crawlerdetect misses or that the
  list may drop), an empty User-Agent, or ua-parser's "Spider" device. A bot gets
  ``ua.is_bot=True`` and ``device="bot"``; when ``ctx.drop_bots`` the event is dropped with
  :attr:`~footfall_capture.enrich.pipeline.DropReason.BOT`.

Cost: a User-Agent is cut to :data:`MAX_UA_LENGTH` characters before any parsing (a crafted
megabyte header must not cost a regex scan per request), and both verdicts are memoized per
User-Agent string (bounded LRU): real traffic has few distinct User-Agents, and parsing one
is costly (crawlerdetect runs one big regex over it).

Known limits: iPadOS Safari asks for desktop sites with a Mac User-Agent, so those iPads
count as desktop; Chrome's reduced User-Agent ("Android 10; K") still tells phones
("Mobile") from tablets, which is all the device class needs.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Final

import msgspec
from crawlerdetect import CrawlerDetect
from ua_parser import Result, parse

from footfall_capture.enrich.pipeline import Draft, Drop, DropReason, SiteContext
from footfall_capture.events import UserAgent

MAX_UA_LENGTH: Final = 1024  # real User-Agents stay under ~500 characters
_CACHE_SIZE: Final = 4096
_TEXT_MAX: Final = 256  # UserAgent fields are ShortText on the wire

# Automation that is not a person, matched anywhere in the User-Agent (case-insensitive).
# Tokens that could occur inside a browser's UA are anchored on the product's "name/".
AUTOMATION: Final = re.compile(
    r"HeadlessChrome|PhantomJS|Puppeteer|Playwright|Selenium|WebDriver|python-requests|"
    r"python-urllib|python-httpx|aiohttp|\bcurl/|\bwget/|Go-http-client|node-fetch|undici|"
    r"\baxios/|okhttp|\bJava/|libwww|Scrapy|HTTPie|Apache-HttpClient|GuzzleHttp|PostmanRuntime",
    re.IGNORECASE,
)
_ANDROID_MOBILE: Final = re.compile(r"\bMobile\b")

_MOBILE_DEVICES: Final = frozenset({"iPhone", "iPod", "Generic Smartphone", "Generic Feature Phone"})
_TABLET_DEVICES: Final = frozenset({"iPad", "Generic Tablet"})
_TABLET_BRANDS: Final = frozenset({"Generic_Android_Tablet"})
_MOBILE_OSES: Final = frozenset(
    {"iOS", "Windows Phone", "Windows Mobile", "BlackBerry OS", "BlackBerry Tablet OS", "KaiOS",
     "Symbian OS", "Symbian^3", "Firefox OS", "Sailfish", "webOS", "Ubuntu Touch", "HarmonyOS"}
)  # fmt: skip
_DESKTOP_OSES: Final = frozenset(
    {"Mac OS X", "macOS", "Linux", "Ubuntu", "Kubuntu", "Fedora", "Debian", "Mint", "Arch Linux",
     "Gentoo", "Red Hat", "CentOS", "SUSE", "openSUSE", "Slackware", "Mandriva", "Chrome OS",
     "Chromium OS", "FreeBSD", "OpenBSD", "NetBSD", "Solaris", "Haiku"}
)  # fmt: skip
_NOT_DESKTOP_WINDOWS: Final = ("Windows Phone", "Windows Mobile", "Windows CE", "Windows RT")

# crawlerdetect keeps the last match on the instance (``matches``); we only read the boolean,
# so one shared instance is safe across threads. Its own 1024-entry cache sits under ours.
_crawlers = CrawlerDetect()


def parse_user_agent(draft: Draft, ctx: SiteContext) -> Draft:
    """Set ``draft.ua`` (browser, version, OS, device class) from ``draft.user_agent``."""
    draft.ua = _parsed(draft.user_agent[:MAX_UA_LENGTH].strip())
    return draft


def detect_bot(draft: Draft, ctx: SiteContext) -> Draft:
    """Flag crawlers and automation; drop them when the site asks to."""
    ua_string = draft.user_agent[:MAX_UA_LENGTH].strip()
    ua = draft.ua if draft.ua is not None else _parsed(ua_string)
    if ua.device == "bot" or _is_bot(ua_string):
        if ctx.drop_bots:
            raise Drop(DropReason.BOT)
        if not ua.is_bot or ua.device != "bot":
            ua = msgspec.structs.replace(ua, is_bot=True, device="bot")
    draft.ua = ua
    return draft


def device_class(result: Result, ua_string: str) -> str:
    """desktop / mobile / tablet / bot / other for one ua-parser result.

    Device families win over the OS (an iPad runs iOS; an Android tablet runs Android);
    Android phones and tablets share everything but the "Mobile" token, which Android
    browsers send on phones only.
    """
    device = result.device
    family = device.family if device is not None else ""
    brand = (device.brand or "") if device is not None else ""
    os_family = result.os.family if result.os is not None else ""
    if family == "Spider":
        return "bot"
    if family in _TABLET_DEVICES or brand in _TABLET_BRANDS or family.startswith("Kindle") or "Tablet" in family:
        return "tablet"
    if family in _MOBILE_DEVICES:
        return "mobile"
    if os_family == "Android":
        return "mobile" if _ANDROID_MOBILE.search(ua_string) else "tablet"
    if os_family in _MOBILE_OSES:
        return "mobile"
    if os_family in _DESKTOP_OSES or family == "Mac":
        return "desktop"
    if os_family.startswith("Windows") and not os_family.startswith(_NOT_DESKTOP_WINDOWS):
        return "desktop"
    return "other"


@lru_cache(maxsize=_CACHE_SIZE)
def _parsed(ua_string: str) -> UserAgent:
    """The event's UserAgent for one (already cut and stripped) header; shared, immutable."""
    if not ua_string:
        return UserAgent(device="other")
    result = parse(ua_string)
    agent = result.user_agent
    browser = version = None
    if agent is not None:
        browser = agent.family[:_TEXT_MAX] or None
        if agent.major:
            version = agent.major if not agent.minor else f"{agent.major}.{agent.minor}"
            version = version[:_TEXT_MAX]
    os_family = None
    if result.os is not None:
        os_family = result.os.family[:_TEXT_MAX] or None
    device = device_class(result, ua_string)
    fields = {"browser": browser, "browser_version": version, "os": os_family, "device": device}
    return msgspec.convert(fields, UserAgent)  # validated: the event is built from it


@lru_cache(maxsize=_CACHE_SIZE)
def _is_bot(ua_string: str) -> bool:
    """Whether a (cut, stripped) User-Agent belongs to a crawler or automation."""
    if not ua_string:
        return True  # every browser sends one; only scripts omit it
    return AUTOMATION.search(ua_string) is not None or _crawlers.is_crawler(ua_string)
