"""Shared inputs for the enrichment tests: a draft factory and real User-Agent strings."""

from __future__ import annotations

from footfall_capture.enrich.pipeline import Draft, SiteContext

TS = 1_763_700_000_000  # 2025-11-21
SALT = b"0123456789abcdef0123456789abcdef"
CTX = SiteContext(site_id="shop", domains=("shop.example",), salt=SALT)

CHROME_WINDOWS = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
)
SAFARI_IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.5 Mobile/15E148 Safari/604.1"
)
SAFARI_IPAD = (
    "Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.5 Mobile/15E148 Safari/604.1"
)
SAFARI_MAC = (
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.5 Safari/605.1.15"
)
CHROME_ANDROID_PHONE = (
    "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36"
)
CHROME_ANDROID_TABLET = (
    "Mozilla/5.0 (Linux; Android 13; SM-X700) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
)
SAMSUNG_TABLET = (
    "Mozilla/5.0 (Linux; Android 11; SAMSUNG SM-T510) AppleWebKit/537.36 (KHTML, like Gecko) "
    "SamsungBrowser/23.0 Chrome/115.0.0.0 Safari/537.36"
)
KINDLE_FIRE = (
    "Mozilla/5.0 (Linux; Android 9; KFTRWI) AppleWebKit/537.36 (KHTML, like Gecko) Silk/130.4.1 "
    "like Chrome/130.0.6723.102 Safari/537.36"
)
FIREFOX_LINUX = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
CHROME_OS = (
    "Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
)
SMART_TV = (
    "Mozilla/5.0 (SMART-TV; Linux; Tizen 6.0) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/4.0 "
    "Chrome/76.0.3809.146 TV Safari/537.36"
)
GOOGLEBOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
GOOGLEBOT_SMARTPHONE = (
    "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/131.0.6778.69 Mobile Safari/537.36 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
)
BINGBOT = "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)"
HEADLESS_CHROME = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36"
)
CURL = "curl/8.5.0"
PYTHON_REQUESTS = "python-requests/2.32.3"

PUBLIC_IP = "81.2.69.142"  # MaxMind's documented GB test address


def make_draft(**fields: object) -> Draft:
    """A realistic page-view draft; keyword arguments override its fields."""
    base: dict[str, object] = {
        "site_id": "shop",
        "type": "pageview",
        "ts": TS,
        "received_at": TS + 40,
        "event_id": "0190f2a4-6b7e-7c3d-8a1b-2c3d4e5f6a7b",
        "url": "https://shop.example/products/42?utm_source=newsletter&utm_medium=email&color=red&fbclid=IwAR0x",
        "title": "Blue kettle",
        "referrer": "https://www.google.com/",
        "ip": PUBLIC_IP,
        "user_agent": CHROME_WINDOWS,
    }
    return Draft(**{**base, **fields})  # type: ignore[arg-type]
