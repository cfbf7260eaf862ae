"""Where webhooks may go: the classification of addresses (IPv4, IPv6 and the IPv6 forms that
carry an IPv4 address), the allowed networks, literal hosts of channel URLs, and the
``FOOTFALL_WEBHOOK_ALLOWED_NETWORKS`` setting."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

from alerts.egress import SETTING, literal_refusal, refusal, refused_address
from footfall.config import ConfigError, load_config

LOCAL = {"FOOTFALL_ENV": "local"}
TEN = (ipaddress.ip_network("10.0.0.0/8"),)


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("127.0.0.1", "loopback"),
        ("127.255.255.254", "loopback"),
        ("::1", "loopback"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("172.31.255.255", "private"),
        ("192.168.1.5", "private"),
        ("fc00::1", "private"),
        ("fd12:3456::1", "private"),
        ("169.254.169.254", "link-local"),  # cloud metadata
        ("fe80::1", "link-local"),
        ("fe80::1%eth0", "link-local"),
        ("100.64.0.1", "shared (carrier-grade NAT)"),
        ("100.127.255.254", "shared (carrier-grade NAT)"),
        ("224.0.0.1", "multicast"),
        ("239.255.255.250", "multicast"),
        ("ff02::1", "multicast"),
        ("ff0e::1", "multicast"),
        ("240.0.0.1", "reserved"),
        ("255.255.255.255", "reserved"),
        ("192.0.0.8", "special-purpose (IETF protocol)"),
        ("fec0::1", "site-local"),
        ("::7f00:1", "reserved"),  # IPv4-compatible ::127.0.0.1 (deprecated)
        ("::ffff:127.0.0.1", "IPv4-mapped loopback"),
        ("::ffff:a9fe:a9fe", "IPv4-mapped link-local"),
        ("::ffff:10.0.0.1", "IPv4-mapped private"),
        ("2002:7f00:1::1", "6to4 loopback"),
        ("2002:a9fe:a9fe::", "6to4 link-local"),
        ("64:ff9b::7f00:1", "NAT64 loopback"),
        ("64:ff9b::a00:1", "NAT64 private"),
    ],
)
def test_non_public_addresses_are_refused_with_the_reason(address: str, why: str) -> None:
    """Each non-public address (and each IPv6 form of one) is refused, saying why."""
    assert refusal(ipaddress.ip_address(address)) == why


@pytest.mark.parametrize(
    "address",
    ["0.1.2.3", "192.0.2.1", "198.51.100.1", "203.0.113.1", "198.18.0.1", "2001:db8::1", "2001::1",
     "2001:2::1", "100::1", "64:ff9b:1::a00:1", "::ffff:192.0.2.1", "2002:c000:201::"],
)  # fmt: skip
def test_special_purpose_addresses_are_refused(address: str) -> None:
    """IANA's special-purpose blocks (this network, documentation, benchmarking, Teredo,
    discard, local-use NAT64, ...) are refused; which word Python gives them varies by version."""
    assert refusal(ipaddress.ip_address(address)) is not None


@pytest.mark.parametrize(
    "address",
    ["8.8.8.8", "1.1.1.1", "93.184.215.14", "2606:4700:4700::1111", "2001:4860:4860::8888", "::ffff:8.8.8.8",
     "2002:808:808::1", "64:ff9b::808:808"],
)  # fmt: skip
def test_public_addresses_pass(address: str) -> None:
    """Public unicast addresses, and the IPv6 forms of a public IPv4 address, are reachable."""
    assert refusal(ipaddress.ip_address(address)) is None


def test_one_refused_address_of_a_name_refuses_the_name() -> None:
    """A name resolving to a public and a private address is refused, naming the private one."""
    refused = refused_address("mixed.example", ["93.184.215.14", "10.0.0.7"], ())
    assert refused is not None
    assert (refused.host, refused.address, refused.why) == ("mixed.example", "10.0.0.7", "private")
    assert "mixed.example (10.0.0.7) is a private address" in str(refused)
    assert SETTING in str(refused)
    assert refused_address("public.example", ["93.184.215.14", "2606:4700:4700::1111"], ()) is None


def test_allowed_networks_let_their_addresses_through_and_no_others() -> None:
    """An allowed network admits its addresses (IPv4-mapped forms too), not its neighbours."""
    assert refused_address("h", ["10.9.8.7", "::ffff:10.0.0.1"], TEN) is None
    assert refused_address("h", ["10.9.8.7", "192.168.0.1"], TEN) is not None
    assert refused_address("h", ["fd00::5"], (ipaddress.ip_network("fd00::/8"),)) is None
    assert refused_address("h", ["127.0.0.1"], (ipaddress.ip_network("127.0.0.1/32"),)) is None
    assert refused_address("h", ["127.0.0.2"], (ipaddress.ip_network("127.0.0.1/32"),)) is not None


@pytest.mark.parametrize(
    ("url", "address"),
    [
        ("http://127.0.0.1:8000/hook", "127.0.0.1"),
        ("http://127.1/hook", "127.0.0.1"),  # the short form inet_aton accepts
        ("http://2130706433/hook", "127.0.0.1"),  # 127.0.0.1 as one number
        ("http://0x7f000001/hook", "127.0.0.1"),
        ("https://169.254.169.254/latest/meta-data/", "169.254.169.254"),
        ("https://[::1]:8443/hook", "::1"),
        ("https://[::ffff:127.0.0.1]/hook", "::ffff:127.0.0.1"),
        ("http://user:pw@10.0.0.1/hook", "10.0.0.1"),
    ],
)
def test_channel_urls_with_a_refused_literal_address_are_refused(url: str, address: str) -> None:
    """A literal address in any form the system parses is refused up front."""
    refused = literal_refusal(url, ())
    assert refused is not None
    assert refused.address == address


@pytest.mark.parametrize(
    "url",
    ["https://hooks.example.com/x", "http://localhost:8000/x", "https://93.184.215.14/x", "https://[2606:4700::1]/x",
     "not a url", "http://[broken/x", ""],
)  # fmt: skip
def test_names_public_literals_and_non_urls_are_left_to_other_checks(url: str) -> None:
    """Names are checked when sending (DNS changes); public literals pass; malformed URLs are
    the URL validator's to refuse."""
    assert literal_refusal(url, ()) is None


def test_an_allowed_literal_is_accepted() -> None:
    """A literal in an allowed network may be a channel's host."""
    assert literal_refusal("http://10.1.2.3:9000/hook", TEN) is None


def test_the_setting_defaults_to_public_addresses_only() -> None:
    """Unset or empty: no network beyond the public internet."""
    assert load_config(LOCAL, Path("/srv")).webhook_allowed_networks == ()
    assert load_config({**LOCAL, SETTING: " "}, Path("/srv")).webhook_allowed_networks == ()


def test_the_setting_reads_networks_addresses_and_any() -> None:
    """CIDRs of both families and bare addresses are read; ``*`` means any address."""
    cfg = load_config({**LOCAL, SETTING: "10.0.0.0/8, 192.168.1.5,fd00::/8 ,"}, Path("/srv"))
    assert cfg.webhook_allowed_networks == (
        ipaddress.ip_network("10.0.0.0/8"),
        ipaddress.ip_network("192.168.1.5/32"),
        ipaddress.ip_network("fd00::/8"),
    )
    assert load_config({**LOCAL, SETTING: "*"}, Path("/srv")).webhook_allowed_networks is None


@pytest.mark.parametrize("raw", ["10.0.0.1/8", "10.0.0.0/33", "intranet", "10.0.0.0/8;192.168.0.0/16", "*,10.0.0.0/8"])
def test_a_bad_setting_stops_the_start_naming_the_variable(raw: str) -> None:
    """Host bits set (a typo that would widen the network), junk, or ``*`` in a list are refused."""
    with pytest.raises(ConfigError) as info:
        load_config({**LOCAL, SETTING: raw}, Path("/srv"))
    assert info.value.variable == SETTING
    assert "10.0.0.0/8" in str(info.value)
