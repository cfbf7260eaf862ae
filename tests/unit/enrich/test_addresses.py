"""The collector's IP helpers: the same answers as ipaddress, faster, and nothing memoized."""

from __future__ import annotations

import ipaddress
import random

import pytest

from footfall_capture.enrich import geo
from footfall_capture.enrich.addresses import (
    _V4_EXCEPTIONS,
    _V4_NOT_GLOBAL,
    _V6_EXCEPTIONS,
    _V6_PRIVATE,
    canonical_ip,
    ipv4_mapped,
    is_global,
    is_global_number,
    network_prefix,
    parse,
    parse_ip,
)
from tests.unit.enrich.drafts import make_draft

TRICKY = [
    "1.2.3.4", "01.2.3.4", "1.2.3", "1.2.3.4 ", " 1.2.3.4", "256.1.1.1", "0.0.0.0", "1.2.3.4.5", "1..2.3",
    "0x1.2.3.4", "1.2.3.04", "+1.2.3.4", "1.2.3.4\x00", "\u0661.2.3.4", "", ":", ":::", "::", "::1", "1::",
    "::ffff:1.2.3.4", "::ffff:01.2.3.4", "::1.2.3.4", "fe80::1%eth0", "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7::",
    "1::2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8:9", "12345::", "ABCD::EF", "1:2:3:4:5:6:1.2.3.4", "::1.2.3.4:5",
    "2A02:CF40:0:0:0:0:0:1", "\ud800",
]  # fmt: skip


def reference(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def samples(count: int) -> list[str]:
    rng = random.Random(5)
    out = list(TRICKY)
    for _ in range(count):
        out.append("".join(rng.choice("0123456789abcdefABCDEF:.% ") for _ in range(rng.randint(1, 20))))
        out.append(str(ipaddress.IPv4Address(rng.getrandbits(32))))
        v6 = ipaddress.IPv6Address(rng.getrandbits(128) >> rng.randint(0, 127))
        out += [str(v6), v6.exploded.upper()]
    return out


def test_parse_ip_accepts_exactly_what_ipaddress_accepts() -> None:
    for text in samples(20_000):
        expected = reference(text)
        got = parse_ip(text)
        assert got == expected, repr(text)
        assert type(got) is type(expected), repr(text)


def zero_run_samples(count: int) -> list[str]:
    """IPv6 addresses rich in zero groups (where spellings differ: which run becomes "::"),
    IPv4-mapped and -compatible ones, in their canonical and their full spellings."""
    rng = random.Random(7)
    out = []
    for _ in range(count):
        groups = [rng.choice((0, 0, 0, 1, 0xFFFF, rng.getrandbits(16))) for _ in range(8)]
        number = 0
        for group in groups:
            number = number << 16 | group
        for value in (number, (0xFFFF << 32) | (number & 0xFFFFFFFF), number & 0xFFFFFFFF):
            address = ipaddress.IPv6Address(value)
            out += [str(address), address.exploded]
    return out


def test_parse_gives_ipaddress_number_and_spelling() -> None:
    """parse() accepts what ipaddress accepts, with the same integer and str() spelling
    (inet_ntop's IPv6 spelling included, dotted forms aside)."""
    for text in samples(10_000) + zero_run_samples(20_000):
        expected = reference(text)
        got = parse(text)
        if expected is None:
            assert got is None, repr(text)
        else:
            assert got == (expected.version == 4, int(expected), str(expected)), repr(text)


def test_ipv4_mapped_is_ipaddress_ipv4_mapped() -> None:
    for text in ["::ffff:1.2.3.4", "::ffff:102:304", "::1.2.3.4", "1.2.3.4", "2a02:cf40::1", "::ffff:0:0"]:
        expected = ipaddress.ip_address(text)
        mapped = getattr(expected, "ipv4_mapped", None)
        got = ipv4_mapped(parse(text))  # type: ignore[arg-type]
        assert got == (None if mapped is None else (True, int(mapped), str(mapped))), text


def test_canonical_ip_is_ipaddress_spelling() -> None:
    for text in samples(5_000):
        expected = reference(text.strip())
        assert canonical_ip(text) == (None if expected is None else str(expected)), repr(text)
    assert canonical_ip(None) is None


# Interpreters released before the fix for CVE-2024-4032 (3.11.10, 3.12.4; Debian backported
# it to 3.11.2) answer from an older table: 192.0.0.8 was global there, and is not.
STDLIB_HAS_REGISTRY_TABLES = hasattr(ipaddress.IPv4Address._constants, "_private_networks_exceptions")  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("8.8.8.8", True), ("81.2.69.142", True), ("10.1.2.3", False), ("100.64.0.1", False),
        ("192.0.0.8", False), ("192.0.0.9", True), ("192.0.0.10", True), ("192.0.0.11", False),
        ("192.0.0.171", False), ("192.0.2.1", False), ("198.19.255.255", False), ("198.20.0.0", True),
        ("255.255.255.255", False), ("224.0.0.1", True),  # multicast is not in the not-reachable table
        ("::ffff:8.8.8.8", True), ("::ffff:10.0.0.1", False), ("::ffff:100.64.0.1", True),
        ("::ffff:192.0.0.9", True), ("2a02:cf40::1", True), ("2001:4860:4860::8888", True),
        ("::1", False), ("fe80::1", False), ("fd00::1", False), ("2001:db8::1", False), ("2002::1", False),
        ("64:ff9b:1::1", False), ("64:ff9b::1", True), ("2001::1", False), ("2001:1::1", True),
        ("2001:1::3", False), ("2001:3::1", True), ("2001:4:112::1", True), ("2001:4:113::1", False),
        ("2001:20::1", True), ("2001:30::1", True), ("2001:40::1", False), ("2001:200::1", True),
    ],
)  # fmt: skip
def test_is_global_follows_the_iana_registries(text: str, expected: bool) -> None:
    parsed = parse(text)
    assert parsed is not None
    assert is_global(ipaddress.ip_address(text)) is expected
    assert is_global_number(parsed.v4, parsed.number) is expected


@pytest.mark.skipif(not STDLIB_HAS_REGISTRY_TABLES, reason="this ipaddress predates the CVE-2024-4032 tables")
def test_is_global_answers_like_the_stdlib() -> None:
    rng = random.Random(9)
    cases: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = []
    tables = ((_V4_NOT_GLOBAL, 32), (_V4_EXCEPTIONS, 32), (_V6_PRIVATE, 128), (_V6_EXCEPTIONS, 128))
    for table, bits in tables:
        for network, mask in table:
            last = network | (~mask & ((1 << bits) - 1))
            for n in (network - 1, network, last, last + 1):
                if 0 <= n < 1 << bits:
                    cases.append(ipaddress.ip_address(n) if bits == 32 else ipaddress.IPv6Address(n))
                    if bits == 32:
                        cases.append(ipaddress.IPv6Address((0xFFFF << 32) | n))  # IPv4-mapped
    for _ in range(20_000):
        cases.append(ipaddress.IPv4Address(rng.getrandbits(32)))
        cases.append(ipaddress.IPv6Address(rng.getrandbits(128) >> rng.randint(0, 127)))
    for address in cases:
        assert is_global(address) == address.is_global, address
        assert is_global_number(address.version == 4, int(address)) == address.is_global, address


def test_geolocation_leaves_no_address_in_the_stdlib_memo() -> None:
    """ipaddress memoizes is_global/is_private per address (lru_cache on 3.11): geolocation
    must not feed it, or the process would keep the last clients' IPs (invariant 5)."""
    memo = getattr(ipaddress.IPv4Address.is_global.fget, "cache_info", None)
    if memo is None:
        pytest.skip("this Python does not memoize is_global")
    before = memo()
    for i in range(20):
        geo.country_of(f"81.2.69.{i + 1}")
    assert memo() == before


def test_fast_lookup_agrees_with_geoip2fast_lookup() -> None:
    db = geo.load_database()
    if geo._by_int is None:
        pytest.skip("geoip2fast changed; the collector uses its public lookup")
    rng = random.Random(11)
    checked = 0
    while checked < 3_000:
        address = (
            ipaddress.IPv4Address(rng.getrandbits(32))
            if checked % 3
            else ipaddress.IPv6Address((0x2 << 124) | rng.getrandbits(124))
        )
        if is_global(address):
            assert geo._code(geo._by_int(int(address))) == geo._code(db.lookup(str(address)).country_code), address
            checked += 1


def test_draft_parses_its_ip_once_and_forgets_it() -> None:
    draft = make_draft(ip="81.2.69.142")
    first = draft.address()
    assert first == ipaddress.IPv4Address("81.2.69.142")
    assert draft.address() is first  # memoized for the same value
    draft.ip = "2a02:cf40::1"
    assert draft.address() == ipaddress.IPv6Address("2a02:cf40::1")  # a new value is parsed anew
    draft.ip = "not an ip"
    assert draft.address() is None
    draft.forget_ip()
    assert (draft.ip, draft.user_agent, draft.address()) == (None, "", None)
    assert draft._address is None


def test_draft_parsed_ip_is_memoized_per_value_and_forgotten() -> None:
    draft = make_draft(ip=" 81.2.69.142 ")
    first = draft.parsed_ip()
    assert first == (True, int(ipaddress.IPv4Address("81.2.69.142")), "81.2.69.142")
    assert draft.parsed_ip() is first
    draft.ip = "2a02:cf40::1"
    assert draft.parsed_ip() == (False, int(ipaddress.IPv6Address("2a02:cf40::1")), "2a02:cf40::1")
    draft.ip = "not an ip"
    assert draft.parsed_ip() is None
    draft.forget_ip()
    assert draft.parsed_ip() is None
    assert draft._parsed is None


def test_draft_given_a_parsed_address_uses_it_without_parsing_again() -> None:
    draft = make_draft(ip=None)
    parsed = parse("::ffff:1.2.3.4")
    draft.set_address(parsed)
    assert draft.ip == "::ffff:102:304"  # the canonical text, as client_ip gives it
    assert draft.parsed_ip() is parsed
    draft.ip = "81.2.69.142"  # a new value is parsed anew, as for any draft
    assert draft.parsed_ip() == parse("81.2.69.142")
    draft.set_address(None)
    assert (draft.ip, draft.parsed_ip()) == (None, None)


@pytest.mark.parametrize(
    ("address", "prefix"),
    [
        ("203.0.113.77", "203.0.113.0"),
        ("81.2.69.160", "81.2.69.0"),
        ("::ffff:81.2.69.160", "81.2.69.0"),  # IPv4-mapped: placed as the IPv4 address it is
        ("2001:db8:abcd:12:3456::1", "2001:db8:abcd::"),
        ("10.1.2.3", "10.1.2.0"),
    ],
)
def test_the_network_prefix_keeps_24_or_48_bits(address: str, prefix: str) -> None:
    parsed = parse(address)
    assert parsed is not None
    assert network_prefix(parsed) == prefix
