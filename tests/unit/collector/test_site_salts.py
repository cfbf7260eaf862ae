"""The host's salts from its collector, on a real socket: fetched with the ingest key, held,
refreshed hourly, not asked again for a while after a failure, and let go with the server."""

from __future__ import annotations

import datetime as dt
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from footfall_capture import site_salts
from footfall_capture.http_sink import Collector
from footfall_capture.salt_days import SaltUnavailable
from footfall_capture.site_salts import SaltGone, SiteSalts
from tests.ports import free_port

KEY = "ffk_test_" + "k" * 40
NOON = int(dt.datetime(2026, 11, 28, 12, tzinfo=dt.UTC).timestamp() * 1000)
DAY_MS = 86_400_000


class Script:
    """A scripted ``GET /api/v1/sites/shop/salts``: ``status`` and the days it answers."""

    def __init__(self) -> None:
        self.status = 200
        self.days = ["2026-11-27", "2026-11-28", "2026-11-29"]
        self.policy, self.timezone = "daily", "UTC"
        self.requests: list[tuple[str, str | None]] = []

    def answer(self) -> bytes:
        salts = [{"day": day, "salt": (day[-2:] * 32)[:64]} for day in self.days]
        return json.dumps(
            {"site_id": "shop", "policy": self.policy, "timezone": self.timezone, "salts": salts}
        ).encode()


@pytest.fixture
def collector() -> Iterator[tuple[Script, Collector]]:
    script = Script()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            script.requests.append((self.path, self.headers.get("Authorization")))
            body = script.answer() if script.status == 200 else b'{"error": "invalid_api_key"}'
            self.send_response(script.status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    port = free_port()
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield script, Collector(f"http://127.0.0.1:{port}", "shop", KEY)
    finally:
        server.shutdown()
        server.server_close()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_salts_are_fetched_with_the_key_held_and_refreshed_hourly(collector: tuple[Script, Collector]) -> None:
    script, target = collector
    clock = Clock()
    salts = SiteSalts(target, clock)
    assert salts.salt(NOON) == bytes.fromhex("28" * 32)
    assert salts.salt(NOON + DAY_MS) == bytes.fromhex("29" * 32)  # tomorrow's, already held
    assert script.requests == [("/api/v1/sites/shop/salts", f"Bearer {KEY}")]
    clock.now += site_salts.REFRESH_S
    script.days = ["2026-11-28", "2026-11-29", "2026-11-30"]
    assert salts.salt(NOON + 2 * DAY_MS) == bytes.fromhex("30" * 32)
    assert len(script.requests) == 2
    with pytest.raises(SaltGone):  # the server no longer gives it: forgotten here too
        salts.salt(NOON - DAY_MS)


def test_the_sites_policy_and_time_zone_pick_the_day(collector: tuple[Script, Collector]) -> None:
    script, target = collector
    script.policy, script.timezone = "daily_site_tz", "Pacific/Kiritimati"  # UTC+14: already the 29th at noon UTC
    assert SiteSalts(target, Clock()).salt(NOON) == bytes.fromhex("29" * 32)


def test_a_refused_key_is_retried_only_after_a_while(
    collector: tuple[Script, Collector], caplog: pytest.LogCaptureFixture
) -> None:
    script, target = collector
    script.status = 401
    clock = Clock()
    salts = SiteSalts(target, clock)
    with pytest.raises(SaltUnavailable):
        salts.salt(NOON)
    with pytest.raises(SaltUnavailable):
        salts.salt(NOON)
    assert len(script.requests) == 1
    assert "the collector answered 401: invalid_api_key" in caplog.text
    assert KEY not in caplog.text
    script.status = 200
    clock.now += site_salts.RETRY_S
    assert salts.salt(NOON) == bytes.fromhex("28" * 32)


def test_held_salts_serve_while_the_collector_is_away(collector: tuple[Script, Collector]) -> None:
    script, target = collector
    clock = Clock()
    salts = SiteSalts(target, clock)
    assert salts.salt(NOON)
    script.status = 503
    clock.now += site_salts.REFRESH_S
    assert salts.salt(NOON) == bytes.fromhex("28" * 32)
    assert len(script.requests) == 2


def test_an_unreachable_collector_makes_salts_unavailable() -> None:
    salts = SiteSalts(Collector(f"http://127.0.0.1:{free_port()}", "shop", KEY), Clock())
    with pytest.raises(SaltUnavailable):
        salts.salt(NOON)
