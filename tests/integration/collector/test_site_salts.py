"""``GET /api/v1/sites/<site>/salts``: a site's own salts for a key of scope ``ingest``, with
which a sender computes the same visitor ids as the collector, and no other site's."""

from __future__ import annotations

import datetime as dt

import redis
from django.test import Client

from footfall.config import Config
from footfall.models import ApiKey, Site
from footfall_capture.enrich.visitor import site_salt, visitor_id
from footfall_capture.events import decode
from footfall_capture.salts import KEY
from tests.integration.collector.test_collect import CHROME, IP, beacon, of_site
from tests.integration.kafka_tail import TopicTail


def salts_of(client: Client, site: Site, key: str | None) -> tuple[int, dict]:
    headers = {"HTTP_AUTHORIZATION": f"Bearer {key}"} if key else {}
    resp = client.get(f"/api/v1/sites/{site.site_id}/salts", **headers)
    return resp.status_code, resp


def test_an_ingest_key_gets_its_sites_salts_and_makes_the_collectors_visitor_ids(
    client: Client, site: Site, cfg: Config, events_tail: TopicTail
) -> None:
    _, key = ApiKey.issue(site, "host", ["ingest"])
    status, resp = salts_of(client, site, key)
    assert status == 200, resp.content
    assert resp["Cache-Control"] == "no-store"
    body = resp.json()
    today = dt.datetime.now(dt.UTC).date()  # the site's policy: daily (UTC)
    assert (body["site_id"], body["policy"]) == (site.site_id, "daily")
    assert [s["day"] for s in body["salts"]] == [(today + dt.timedelta(days=n)).isoformat() for n in (-1, 0, 1)]
    salts = {s["day"]: bytes.fromhex(s["salt"]) for s in body["salts"]}
    day_salt = redis.Redis.from_url(cfg.redis_url).get(KEY.format(day=today.isoformat()))
    assert salts[today.isoformat()] == site_salt(day_salt, site.site_id) != day_salt  # the site's, not the day's

    # A page view through the public endpoint: its visitor id is what a holder of the site's salt computes.
    assert beacon(client, {"site_id": site.site_id, "url": "https://example.com/salted"}).status_code == 202
    [msg] = events_tail.read(of_site(site), 1)
    assert decode(msg.value()).visitor_id == visitor_id(salts[today.isoformat()], site.site_id, IP, CHROME)


def test_the_salts_need_an_ingest_key_of_the_site(client: Client, site: Site) -> None:
    other = Site.objects.create(site_id=f"{site.site_id}-b", name="Other", domains=["other.test"])
    _, other_key = ApiKey.issue(other, "x", ["ingest"])
    _, read_key = ApiKey.issue(site, "x", ["read"])
    answers = {
        "no key": salts_of(client, site, None),
        "a bad key": salts_of(client, site, "ff_nope_nope"),
        "another site's key": salts_of(client, site, other_key),
        "a read key": salts_of(client, site, read_key),
    }
    assert {what: (status, resp.json()["error"]) for what, (status, resp) in answers.items()} == {
        "no key": (401, "missing_api_key"),
        "a bad key": (401, "invalid_api_key"),
        "another site's key": (404, "unknown_site"),
        "a read key": (403, "missing_scope"),
    }
    _, mine = salts_of(client, other, other_key)
    theirs = {s["day"]: s["salt"] for s in mine.json()["salts"]}
    _, key = ApiKey.issue(site, "host", ["ingest"])
    ours = {s["day"]: s["salt"] for s in salts_of(client, site, key)[1].json()["salts"]}
    assert ours.keys() == theirs.keys()
    assert all(ours[day] != theirs[day] for day in ours)
