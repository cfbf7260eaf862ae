"""The tracker and its beacons from a tracked site's own domain, with names a deployment chose.

As deployed: the collector runs with its systemd unit's command and FOOTFALL_TRACKER_PATH /
FOOTFALL_COLLECT_PATH set, behind the shipped nginx site (those names added to its collector
location, as docs/collector.md#your-own-domain says), and a tracked site's nginx includes
deploy/proxy/nginx/site-forwarding.conf as it ships. The test plays a CDN in front of both
(it sends the visitor's address in X-Forwarded-For, from 127.0.0.1, as such a hop would), and
Footfall lists 127.0.0.1 in FOOTFALL_FORWARDING_PROXIES: the site's server and that hop.
Page views through the site's proxy and straight to Footfall are the same events: as many,
with the visitor's country and the same visitor id.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from footfall.config import Config
from tests.integration.collector.test_collect_capacity import behind_the_proxy, running, unit_command
from tests.ports import free_port
from tests.proxy import SERVER_NAME, Ports, nginx_binary, proxy_config, site_forwarding_config
from tests.reliability.faults import fresh_topic, topic_events, wait_for

# Committed (no test transaction): the collector's own process reads the site.
pytestmark = pytest.mark.django_db(transaction=True)

TRACKER, COLLECT = "/js/site.js", "/e/site"  # the names site-forwarding.conf ships with
VISITOR = "81.2.69.160"  # a GB address in the bundled GeoIP database
FIREFOX = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
PAGES = 10


@dataclass(frozen=True)
class Served:
    footfall: str  # the Footfall proxy's https:// address (Host: stats.example.com)
    site: str  # the tracked site's http:// address (Host: example.com)
    site_id: str
    topic: str


@pytest.fixture
def served(cfg: Config, tmp_path: Path) -> Iterator[Served]:
    from footfall.models import Site

    site = Site.objects.create(site_id=f"fwd-{uuid.uuid4().hex[:8]}", name="Forwarded", domains=["example.com"])
    collector = free_port()
    ports = Ports(https=free_port(), http=free_port(), web=collector, collector=collector)
    footfall_conf = proxy_config(tmp_path / "footfall-proxy", ports, collector_paths=(TRACKER, COLLECT))
    site_port = free_port()
    certificate = tmp_path / "footfall-proxy" / "tls" / "fullchain.pem"
    site_conf = site_forwarding_config(tmp_path / "site-proxy", site_port, ports.https, certificate)
    nginx = str(nginx_binary())
    with fresh_topic(cfg, prefix="fwd") as topic:
        env = behind_the_proxy(topic, FOOTFALL_FORWARDING_PROXIES="127.0.0.1/32", FOOTFALL_TRACKER_PATH=TRACKER,
                               FOOTFALL_COLLECT_PATH=COLLECT)  # fmt: skip
        with (
            running(unit_command("footfall-collector.service", collector), tmp_path / "collector.log", env),
            running([nginx, "-p", str(footfall_conf.parent), "-c", str(footfall_conf), "-g", "daemon off;"],
                    tmp_path / "footfall-nginx.log"),
            running([nginx, "-p", str(site_conf.parent), "-c", str(site_conf), "-g", "daemon off;"],
                    tmp_path / "site-nginx.log") as site_nginx,
        ):  # fmt: skip
            served = Served(f"https://127.0.0.1:{ports.https}", f"http://127.0.0.1:{site_port}", site.site_id, topic)

            def up() -> bool:
                assert site_nginx.poll() is None, (tmp_path / "site-nginx.log").read_text()
                with contextlib.suppress(httpx.HTTPError), site_client(served) as http:
                    return http.get(TRACKER).status_code == 200
                return False

            wait_for(up, 90, "the tracker through the site's proxy")
            yield served


def footfall_client(served: Served) -> httpx.Client:
    return httpx.Client(base_url=served.footfall, verify=False, headers={"Host": SERVER_NAME}, timeout=30)


def site_client(served: Served) -> httpx.Client:
    return httpx.Client(base_url=served.site, headers={"Host": "example.com"}, timeout=30)


def test_the_tracker_and_page_views_through_the_sites_proxy_count_as_direct_ones(cfg: Config, served: Served) -> None:
    with footfall_client(served) as footfall, site_client(served) as site:
        direct_js = footfall.get("/footfall.js", headers={"Accept-Encoding": "gzip"})
        forwarded_js = site.get(TRACKER, headers={"Accept-Encoding": "gzip", "Cookie": "session=the-sites-own"})
        assert forwarded_js.status_code == 200
        assert forwarded_js.headers["Content-Encoding"] == "gzip"
        assert forwarded_js.content == direct_js.content  # the same minified tracker, decoded
        assert int(forwarded_js.headers["Content-Length"]) <= 2000

        visitor = {"User-Agent": FIREFOX, "X-Forwarded-For": VISITOR, "Origin": "https://example.com",
                   "Content-Type": "text/plain", "Cookie": "session=the-sites-own"}  # fmt: skip
        for n in range(PAGES):
            for via, http, path in (("direct", footfall, "/collect"), ("forwarded", site, COLLECT)):
                body = json.dumps({"site_id": served.site_id, "url": f"https://example.com/{via}/{n}"})
                answer = http.post(path, content=body, headers=visitor)
                assert answer.status_code == 202, (via, answer.text)

    wait_for(lambda: len(topic_events(cfg, served.topic)) >= 2 * PAGES, 30, "every page view on the log")
    events = topic_events(cfg, served.topic)
    by_way = {way: [e for e in events if e.path.startswith(f"/{way}/")] for way in ("direct", "forwarded")}
    assert {way: len(found) for way, found in by_way.items()} == {"direct": PAGES, "forwarded": PAGES}
    assert {(e.type, e.country, e.ua.browser) for e in events} == {("pageview", "GB", "Firefox")}
    assert len({e.visitor_id for e in events}) == 1  # one visitor, whichever way the beacon came
