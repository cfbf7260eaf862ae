"""Query strings: a page URL keeps only ref, source and the site's own parameters (utm_* become
the campaign), over the real collector, Kafka, Redis and the API."""

from __future__ import annotations

import datetime as dt
import io
import time

import pytest
import redis
from django.core.management import CommandError, call_command
from django.test import Client

from collector.runtime import get_ingestor
from footfall.config import Config
from footfall.models import ApiKey, Site
from footfall_capture.events import decode
from realtime.keys import KeyLayout
from realtime.store import CounterStore
from tests.integration.collector.test_collect import beacon, of_site
from tests.integration.kafka_tail import TopicTail

SECRET = "x%40private.example"  # an address in a query string, as a sign-up form might leave it


def test_a_url_is_stored_and_reported_with_the_kept_parameters_only(
    client: Client, cfg: Config, site: Site, events_tail: TopicTail
) -> None:
    """``?email=…&utm_source=y`` is stored and reported with its campaign only; the site's own
    ``page`` stays; an internal referrer loses its ``?email=`` too."""
    with pytest.raises(CommandError, match="query_params: 'fbclid' is a tracking parameter"):
        call_command("create_site", site.site_id, "--keep-param", "fbclid", stdout=io.StringIO())
    call_command("create_site", site.site_id, "--keep-param", "Page", stdout=io.StringIO())
    get_ingestor().sites.invalidate()  # as the site cache's 30 s would
    page = f"https://example.com/signup?email={SECRET}&utm_source=y&page=2&token=t0k3n&ref=hn"
    referrer = f"https://example.com/account?email={SECRET}#form"
    assert beacon(client, {"site_id": site.site_id, "url": page, "referrer": referrer}).status_code == 202
    [msg] = events_tail.read(of_site(site), 1)
    for private in (b"email", b"private.example", b"t0k3n", b"#form"):
        assert private not in msg.value()
    event = decode(msg.value())
    assert (event.url, event.path) == ("https://example.com/signup?page=2&ref=hn", "/signup")
    assert event.utm is not None
    assert event.utm.source == "y"
    assert event.referrer == "https://example.com/account"

    layout = KeyLayout(retention_s=cfg.realtime_retention_s)
    store = CounterStore(redis.Redis.from_url(cfg.redis_url), layout)
    store.apply([event], now_ms=int(time.time() * 1000))
    _, key = ApiKey.issue(site, "read", ["read"])
    today = dt.datetime.now(dt.UTC).date()
    span = {"from": today.isoformat(), "to": (today + dt.timedelta(days=1)).isoformat()}
    try:
        answers = {}
        for dimension in ("utm_sources", "pages", "referrer_urls"):
            resp = client.get(f"/api/v1/sites/{site.site_id}/breakdown/{dimension}", span,
                              HTTP_AUTHORIZATION=f"Bearer {key}")  # fmt: skip
            assert resp.status_code == 200, resp.content
            assert b"email" not in resp.content
            assert b"private.example" not in resp.content
            answers[dimension] = [(r["value"], r["pageviews"]) for r in resp.json()["results"]]
        assert answers == {
            "utm_sources": [("y", 1)],
            "pages": [("/signup", 1)],
            "referrer_urls": [("https://example.com/account", 1)],
        }
    finally:
        for name in store.client.scan_iter(match=layout.site_pattern(site.site_id), count=1000):
            store.client.delete(name)
