"""The middleware's HTTP transport: a hit becomes an item of the collector's batch API.

Where things are computed (docs/host-package.md): the **visitor id** here, on the host, with
the site's salt of the day from its collector (:mod:`footfall_capture.site_salts`), so the
client's IP never leaves the host's memory; the **country** on the collector, from the IP cut
to its network (/24, /48), which is all that is sent of it. Everything else the event needs
(the canonical URL, referrer class, user agent, bot flag) is worked out by the collector with
the site's settings there, so the host carries none of the enrichment libraries. Items go to
the process's :class:`~footfall_capture.http_sink.HttpSink`: batched, gzip'd, spooled while the
collector is unreachable.
"""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path

from footfall_capture.enrich.addresses import client_address, network_prefix
from footfall_capture.enrich.visitor import address_visitor_id
from footfall_capture.events import MAX_INPUT_TEXT, new_event_id
from footfall_capture.hits import MAX_USER_AGENT, Hit
from footfall_capture.http_sink import Collector, HttpSink
from footfall_capture.page_urls import PageUrls
from footfall_capture.salt_days import SaltUnavailable
from footfall_capture.settings import CaptureSettings
from footfall_capture.site_salts import SiteSalts
from footfall_capture.spool import Spool
from footfall_capture.worker import TryLater


class HttpTransport:
    """``deliver(hit)`` on the middleware's worker thread; ``close()`` spools what is unsent."""

    def __init__(self, settings: CaptureSettings, urls: PageUrls, stats: Counter[str]) -> None:
        assert settings.collector is not None  # the settings make one for this transport
        self.settings = settings
        self.urls = urls
        self.stats = stats
        self.salts = SiteSalts(settings.collector)
        self.sink = shared_http_sink(settings.collector, settings.spool_dir, settings.spool_max_bytes)

    def hold_salts(self, now_ms: int) -> None:
        """Start the sink (which replays what an earlier run spooled) and fetch the site's salts
        ahead of the first event (a job on the worker)."""
        self.sink.start()
        self._salt(now_ms)

    def _salt(self, ts_ms: int) -> bytes:
        try:
            return self.salts.salt(ts_ms)
        except SaltUnavailable as exc:
            raise TryLater(str(exc)) from None

    def deliver(self, hit: Hit) -> None:
        """Send ``hit`` as a batch item (raises :class:`TryLater` while no salt can be had)."""
        salt = self._salt(hit.ts)  # first: a job kept for later must not have done anything yet
        if hit.dnt and self.settings.respect_dnt:
            self.stats["dropped_do_not_track"] += 1
            return
        url, _host = self.urls.url_and_host(hit.path, hit.url_values)
        user_agent = (hit.user_agent or "")[:MAX_USER_AGENT]
        address = client_address(hit.remote_addr, hit.forwarded_for, self.settings.trusted_proxies)
        item: dict[str, object] = {
            "site_id": self.settings.site_id,
            "type": self.settings.event_type,
            "event_id": new_event_id(),
            "ts": hit.ts,
            "url": url[:MAX_INPUT_TEXT],
            "user_agent": user_agent,
            "visitor_id": address_visitor_id(salt, self.settings.site_id, address, user_agent),
        }
        if address is not None:
            item["ip"] = network_prefix(address)
        if hit.referrer:
            item["referrer"] = hit.referrer[:MAX_INPUT_TEXT]
        if hit.dnt:  # the site's policy on the server decides
            item["dnt"] = True
        if hit.method is not None:
            item.update(method=hit.method, status=hit.status, duration_ms=hit.duration_ms)
        self.sink.send(item)

    def close(self) -> None:
        self.sink.close()


_shared: dict[tuple[Collector, Path, int], HttpSink] = {}
_shared_lock = threading.Lock()


def shared_http_sink(collector: Collector, spool_dir: Path, spool_max_bytes: int) -> HttpSink:
    """The process's sink for a collector and spool: one sending thread and one spool however
    many times Django builds the middleware (each test client, each handler)."""
    key = (collector, spool_dir, spool_max_bytes)
    with _shared_lock:
        sink = _shared.get(key)
        if sink is None:
            sink = _shared[key] = HttpSink(collector, Spool(spool_dir, spool_max_bytes))
    return sink
