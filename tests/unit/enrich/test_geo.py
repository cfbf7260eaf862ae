"""Geolocation step: a country code for public IPv4 and IPv6 addresses, None otherwise."""

from __future__ import annotations

import threading

import pytest

from footfall_capture.enrich import geo
from footfall_capture.enrich.geo import country_of, geolocate, load_database
from tests.unit.enrich.drafts import CTX, make_draft


def located(ip: str | None) -> str | None:
    return geolocate(make_draft(ip=ip), CTX).country


@pytest.mark.parametrize(
    ("ip", "country"),
    [
        ("81.2.69.142", "GB"),
        ("8.8.8.8", "US"),
        ("193.99.144.80", "DE"),
        ("2001:4860:4860::8888", "US"),
        ("2a00:1450:4001:80b::200e", "DE"),
        ("2A00:1450:4001:80B::200E", "DE"),
    ],
)
def test_public_addresses_get_their_country(ip: str, country: str) -> None:
    """IPv4 and IPv6 (bundled IPv6 data file) resolve to an ISO alpha-2 code."""
    assert located(ip) == country


def test_ipv4_mapped_ipv6_is_looked_up_as_ipv4() -> None:
    """::ffff:a.b.c.d (a dual-stack socket's view of an IPv4 client) is that IPv4 address."""
    assert located("::ffff:81.2.69.142") == "GB"


@pytest.mark.parametrize(
    "ip",
    [
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.20",
        "127.0.0.1",
        "169.254.10.1",
        "100.64.0.1",
        "0.0.0.0",
        "255.255.255.255",
        "203.0.113.5",
        "::1",
        "fe80::1",
        "fe80::1%eth0",
        "fd12:3456:789a::1",
        "2001:db8::1",
    ],
)
def test_non_public_addresses_have_no_country(ip: str) -> None:
    """Private, loopback, link-local, CGNAT, documentation and reserved addresses give None."""
    assert located(ip) is None


@pytest.mark.parametrize("ip", [None, "", "garbage", "1.2.3", "999.1.1.1", "81.2.69.142:443", "81.2.69.142, 10.0.0.1"])
def test_missing_or_invalid_ip_has_no_country(ip: str | None) -> None:
    """No IP, or text that is not exactly one IP address, gives None (inet_aton shorthand too)."""
    assert located(ip) is None


def test_surrounding_blanks_are_ignored() -> None:
    """A header value with stray blanks still resolves."""
    assert country_of(" 81.2.69.142 ") == "GB"


def test_geolocate_keeps_the_ip_for_later_steps() -> None:
    """geolocate only reads the IP; assign_visitor_id erases it later."""
    assert geolocate(make_draft(ip="8.8.8.8"), CTX).ip == "8.8.8.8"


def test_database_loads_once_across_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Concurrent first calls load one database instance, with IPv6 data."""
    monkeypatch.setattr(geo, "_db", None)  # as in a fresh process (the file is reloaded, same data)
    seen: list[object] = []
    threads = [threading.Thread(target=lambda: seen.append(load_database())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({id(db) for db in seen}) == 1
    assert load_database().ipv6
