"""Synthetic but realistic traffic for the demo and for tests: pure, seeded, no I/O.

:class:`DemoTraffic` yields schema-v1 :class:`~footfall_capture.events.Event` objects for a small
news-like site: a Zipf-like page popularity, a mix of search/social/email/direct/other
referrers, desktop/mobile/tablet visitors from a fixed pool, and campaign tags on part of
the social and email traffic. The same seed gives the same stream.

:meth:`DemoTraffic.beacon` gives what a server would send the collector (raw referrer,
address and User-Agent); :meth:`DemoTraffic.event` gives an already-enriched event.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field

from footfall_capture.events import SCHEMA_VERSION, Event, UserAgent, Utm, new_event_id

PAGES = [
    ("/", "Home"),
    ("/pricing", "Pricing"),
    ("/blog/lambda-architecture", "Lambda architecture in practice"),
    ("/blog/kafka-exactly-once", "Exactly-once with Kafka"),
    ("/docs/install", "Install"),
    ("/docs/api", "API reference"),
    ("/about", "About us"),
    ("/contact", "Contact"),
]
REFERRERS = [  # (referrer URL, domain, type, weight)
    (None, None, "direct", 30),
    ("https://www.google.com/", "google.com", "search", 25),
    ("https://duckduckgo.com/", "duckduckgo.com", "search", 6),
    ("https://news.ycombinator.com/item?id=1", "news.ycombinator.com", "social", 10),
    ("https://www.reddit.com/r/dataengineering/", "reddit.com", "social", 8),
    ("https://t.co/abc", "t.co", "social", 5),
    ("https://mail.google.com/", "mail.google.com", "email", 4),
    ("https://example-blog.dev/links", "example-blog.dev", "other", 6),
]
AGENTS = [  # (browser, os, device, the User-Agent header such a browser sends)
    ("Chrome", "Windows", "desktop",
     "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"),
    ("Mobile Safari", "iOS", "mobile",
     "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
     "Version/17.1 Mobile/15E148 Safari/604.1"),
    ("Chrome Mobile", "Android", "mobile",
     "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
     "Chrome/131.0.0.0 Mobile Safari/537.36"),
    ("Firefox", "Linux", "desktop", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"),
    ("Safari", "Mac OS X", "desktop",
     "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) "
     "Version/17.1 Safari/605.1.15"),
    ("Mobile Safari", "iOS", "tablet",
     "Mozilla/5.0 (iPad; CPU OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
     "Version/17.1 Mobile/15E148 Safari/604.1"),
]  # fmt: skip
# Address prefixes the bundled GeoIP database places in each country (synthetic visitors only).
COUNTRIES = [("US", "100.0"), ("DE", "91.64"), ("GB", "80.0"), ("FR", "62.4"), ("IN", "49.36"),
             ("BR", "177.0"), ("JP", "126.0"), ("NL", "145.0")]  # fmt: skip


@dataclass
class DemoTraffic:
    """A seeded stream of page views for ``site_id`` on ``host`` from ``visitors`` visitors."""

    site_id: str = "demo"
    host: str = "demo.footfall.local"
    visitors: int = 500
    seed: int = 0
    _rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)  # noqa: S311 - synthetic traffic, not security

    def _visit(self) -> tuple[int, str, str, tuple[str | None, str | None, str, int]]:
        rng = self._rng
        visitor = rng.randrange(self.visitors)
        path, title = PAGES[min(int(rng.paretovariate(1.2)) - 1, len(PAGES) - 1)]
        referrer = rng.choices(REFERRERS, weights=[r[3] for r in REFERRERS])[0]
        return visitor, path, title, referrer

    def beacon(self, ts_ms: int) -> dict[str, object]:
        """One page view as a server-side beacon (the batch API's item): raw referrer, the
        visitor's address and User-Agent header, for the collector to enrich."""
        visitor, path, title, (referrer, _, _, _) = self._visit()
        # A visitor keeps one device and one address, as a real person would.
        prefix = COUNTRIES[visitor % len(COUNTRIES)][1]
        return {
            "site_id": self.site_id,
            "url": f"https://{self.host}{path}",
            "title": title,
            "referrer": referrer,
            "ts": ts_ms,
            "ip": f"{prefix}.{visitor // 250 % 4}.{visitor % 250 + 1}",
            "user_agent": AGENTS[visitor % len(AGENTS)][3],
        }

    def visit(self, ts_ms: int) -> list[dict[str, object]]:
        """A page view as :meth:`beacon` gives it, ending at ``ts_ms``, and what its visitor
        did there, as the tracker reports it: about half report engaged time and scroll depth
        (the page view is then that much earlier), a third of the pricing page's visitors
        sign up (a custom event with a plan, the demo's goal), and each pro sign-up pays (a
        ``purchase`` with an amount and a currency, the demo's revenue goal). Nothing lies after
        ``ts_ms``."""
        rng = self._rng
        view = {**self.beacon(ts_ms), "event_id": new_event_id()}
        out = [view]
        if rng.random() < 0.5:
            engaged = rng.randrange(2_000, 180_000)
            props = {"engaged_ms": engaged, "scroll_depth": rng.randrange(10, 101), "pageview_id": view["event_id"]}
            view["ts"] = ts_ms - engaged
            out.append({**view, "type": "engagement", "event_id": new_event_id(), "ts": ts_ms, "props": props})
        if str(view["url"]).endswith("/pricing") and rng.random() < 0.3:
            view["ts"] = min(int(view["ts"]), ts_ms - rng.randrange(10_000, 300_000))  # type: ignore[call-overload]
            signup = {**view, "type": "signup", "event_id": new_event_id(), "ts": ts_ms, "referrer": None}
            plan = rng.choice(["pro", "pro", "free"])
            out.append({**signup, "props": {"plan": plan}})
            if plan == "pro":
                amount, currency = rng.choice([(19.99, "EUR"), (49, "EUR"), (99, "EUR"), (59, "USD")])
                out.append({**signup, "type": "purchase", "event_id": new_event_id(),
                            "props": {"amount": amount, "currency": currency}})  # fmt: skip
        return out

    def event(self, ts_ms: int, received_at_ms: int | None = None) -> Event:
        """One already-enriched page view at event time ``ts_ms`` (ms, UTC), for tests of the
        consumers that need events without running the collector."""
        rng = self._rng
        visitor, path, title, (referrer, ref_domain, ref_type, _) = self._visit()
        browser, os_name, device, _ = AGENTS[visitor % len(AGENTS)]
        country = COUNTRIES[visitor % len(COUNTRIES)][0]
        utm = None
        if ref_type in {"social", "email"} and rng.random() < 0.5:
            utm = Utm(source=ref_domain, medium=ref_type, campaign=rng.choice(["launch", "newsletter-42"]))
        return Event(
            event_id=new_event_id(),
            site_id=self.site_id,
            type="pageview",
            ts=ts_ms,
            received_at=received_at_ms if received_at_ms is not None else ts_ms,
            schema=SCHEMA_VERSION,
            url=f"https://{self.host}{path}",
            host=self.host,
            path=path,
            title=title,
            referrer=referrer,
            ref_domain=ref_domain,
            ref_type=ref_type,
            utm=utm,
            visitor_id=hashlib.sha256(f"{self.site_id}:{visitor}".encode()).hexdigest()[:32],
            ua=UserAgent(browser=browser, os=os_name, device=device),
            country=country,
        )
