"""Synthetic but realistic traffic for the demo and for tests: pure, seeded, no I/O.

:class:`DemoTraffic` yields schema-v1 :class:`~footfall.events.Event` objects for a small
news-like site: a Zipf-like page popularity, a mix of search/social/email/direct/other
referrers, desktop/mobile/tablet visitors from a fixed pool, and campaign tags on part of
the social and email traffic. The same seed gives the same stream.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field

from footfall.events import SCHEMA_VERSION, Event, UserAgent, Utm, new_event_id

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
AGENTS = [  # (browser, os, device, weight)
    ("Chrome", "Windows", "desktop", 35),
    ("Safari", "iOS", "mobile", 25),
    ("Chrome", "Android", "mobile", 20),
    ("Firefox", "Linux", "desktop", 8),
    ("Safari", "Mac OS X", "desktop", 10),
    ("Safari", "iOS", "tablet", 2),
]
COUNTRIES = [("US", 35), ("DE", 15), ("GB", 12), ("FR", 8), ("IN", 10), ("BR", 6), ("JP", 5), ("NL", 9)]


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

    def event(self, ts_ms: int, received_at_ms: int | None = None) -> Event:
        """One page view at event time ``ts_ms`` (ms, UTC)."""
        rng = self._rng
        visitor = rng.randrange(self.visitors)
        path, title = PAGES[min(int(rng.paretovariate(1.2)) - 1, len(PAGES) - 1)]
        referrer, ref_domain, ref_type, _ = rng.choices(REFERRERS, weights=[r[3] for r in REFERRERS])[0]
        # A visitor keeps one device and country, as a real person would.
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
