"""One IP parser for the collector: the client address, geolocation and the visitor id all use it.

:func:`parse_ip` accepts exactly what :func:`ipaddress.ip_address` accepts and returns the
same address object; it is only faster. On CPython 3.11 ``ipaddress`` parses text in pure
Python, and a beacon used to pay that three times (client address, country, visitor id). The C parser
``socket.inet_pton`` is strict in the same way (dotted quads only, no leading zeros, no
``inet_aton`` shorthand like ``1.2.3``, at most one ``::``), so a string it takes is
turned into the address from its packed bytes; anything it refuses, such as an IPv6
scope id (``fe80::1%eth0``), falls through to ``ipaddress`` itself, which decides.
:func:`parse` gives the same address as a :class:`ParsedIP` (integer and canonical text,
both from C): what the hot paths use, as no ``ipaddress`` object is needed there.

:func:`is_global` replaces ``ipaddress``'s ``is_global`` property, because that property and
``is_private`` are memoized with ``functools.lru_cache``: the stdlib kept the last 128 client
addresses of each family in memory. Nothing here is memoized: a cache keyed by IP would keep
raw IPs in memory after their request (invariant 5). Its answers follow the IANA
special-purpose address registries as CPython defines them since the fix for CVE-2024-4032
(3.11.10, 3.12.4, 3.13; Debian backported it to its 3.11.2): not-globally-reachable blocks
minus their exceptions, so ``192.0.0.8`` is not global while ``192.0.0.9`` is. Older
interpreters answer from an older table; the collector does not depend on which one runs it.
"""

from __future__ import annotations

import bisect
import ipaddress
import socket
from collections.abc import Sequence
from typing import Final, NamedTuple

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_V4: Final = socket.AF_INET
_V6: Final = socket.AF_INET6


def _pton(text: str) -> tuple[int, bytes | None]:
    """The address family ``text`` would be, and its packed form if the C parser takes it."""
    family = _V6 if ":" in text else _V4
    try:
        return family, socket.inet_pton(family, text)
    except (OSError, ValueError, UnicodeError):  # not an address for the C parser (ValueError: a NUL byte)
        return family, None


def parse_ip(text: str) -> IPAddress | None:
    """The address spelled by ``text`` (no surrounding spaces), or ``None`` if it is none."""
    family, packed = _pton(text)
    if packed is not None:
        return ipaddress.IPv4Address(packed) if family == _V4 else ipaddress.IPv6Address(packed)
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


class ParsedIP(NamedTuple):
    """What the collector needs of an address (:func:`parse`): no ``ipaddress`` object, whose
    construction and (for IPv6) spelling are pure Python and were most of a beacon's IP work."""

    v4: bool  # an IPv4 address (an IPv4-mapped IPv6 address is IPv6 here, as in ipaddress)
    number: int  # int(ipaddress.ip_address(text))
    text: str  # str(ipaddress.ip_address(text)): the canonical spelling


def parse(text: str) -> ParsedIP | None:
    """:func:`parse_ip`'s address (same acceptance: no surrounding spaces) as a :class:`ParsedIP`.

    In C for what ``inet_pton`` takes: ``inet_ntop`` spells IPv4 exactly as ``ipaddress``
    does, and IPv6 too (RFC 5952: lower case, the first longest run of two or more zero
    groups as ``::``) except the forms it writes with a dotted IPv4 tail (IPv4-mapped and
    -compatible addresses), which ``ipaddress`` writes in hex on 3.11: those are spelled by
    ``ipaddress``. Anything else (an IPv6 scope id) goes through :func:`parse_ip`."""
    family, packed = _pton(text)
    if packed is not None:
        number = int.from_bytes(packed, "big")
        spelled = socket.inet_ntop(family, packed)
        if family == _V4:
            return ParsedIP(True, number, spelled)
        if "." in spelled:
            spelled = str(ipaddress.IPv6Address(number))
        return ParsedIP(False, number, spelled)
    address = parse_ip(text)
    if address is None:
        return None
    return ParsedIP(address.version == 4, int(address), str(address))


def ipv4_mapped(parsed: ParsedIP) -> ParsedIP | None:
    """The IPv4 address inside an IPv4-mapped IPv6 address (``::ffff:a.b.c.d``), else ``None``
    (``ipaddress``'s ``ipv4_mapped``)."""
    if parsed.v4 or parsed.number >> 32 != 0xFFFF:
        return None
    number = parsed.number & 0xFFFFFFFF
    return ParsedIP(True, number, socket.inet_ntop(_V4, number.to_bytes(4, "big")))


NETWORK_BITS: Final = {True: 24, False: 48}  # the prefix kept of an IPv4 and an IPv6 address


def network_prefix(parsed: ParsedIP) -> str:
    """The address with all but its network cut away (/24 for IPv4, /48 for IPv6, an IPv4-mapped
    address as IPv4): enough to place a visitor's country, too little to find the visitor."""
    address = ipv4_mapped(parsed) or parsed
    bits = 32 if address.v4 else 128
    keep = NETWORK_BITS[address.v4]
    number = address.number >> (bits - keep) << (bits - keep)
    return str(ipaddress.IPv4Address(number) if address.v4 else ipaddress.IPv6Address(number))


def canonical_ip(text: str | None) -> str | None:
    """``text`` in its canonical spelling (``ipaddress``'s ``str``), or ``None`` if it is no IP."""
    if not text:
        return None
    text = text.strip()
    if ":" not in text:
        try:  # the common case, without building a ParsedIP
            return socket.inet_ntop(_V4, socket.inet_pton(_V4, text))
        except (OSError, ValueError, UnicodeError):
            pass
    parsed = parse(text)
    return None if parsed is None else parsed.text


def _table(*networks: str) -> tuple[tuple[int, int], ...]:
    """(network address, netmask) as integers, for a membership test without objects."""
    return tuple((int(n.network_address), int(n.netmask)) for n in map(ipaddress.ip_network, networks))


def _spans(table: tuple[tuple[int, int], ...], bits: int) -> list[tuple[int, int]]:
    """The table's networks as sorted [first, last] address ranges."""
    full = (1 << bits) - 1
    return sorted((network, network | (~mask & full)) for network, mask in table)


def _ranges(
    table: tuple[tuple[int, int], ...], bits: int, exceptions: tuple[tuple[int, int], ...] = ()
) -> tuple[list[int], list[int]]:
    """The table's networks minus the ``exceptions`` networks, as sorted, disjoint, merged
    [first, last] ranges (starts, ends), for bisect."""
    starts: list[int] = []
    ends: list[int] = []
    for first, last in _spans(table, bits):
        if ends and first <= ends[-1] + 1:
            ends[-1] = max(ends[-1], last)
        else:
            starts.append(first)
            ends.append(last)
    for hole_first, hole_last in _spans(exceptions, bits):  # a handful: cut each out of the range holding it
        for i, (first, last) in enumerate(zip(starts, ends, strict=True)):
            if first <= hole_first and hole_last <= last:
                pieces = [(a, b) for a, b in ((first, hole_first - 1), (hole_last + 1, last)) if a <= b]
                starts[i : i + 1] = [a for a, _ in pieces]
                ends[i : i + 1] = [b for _, b in pieces]
                break
    return starts, ends


# The IANA IPv4 special-purpose registry's blocks that are not globally reachable, and the
# addresses inside them that are (CPython's IPv4Address._constants since CVE-2024-4032).
# is_global also excludes 100.64.0.0/10 (CGNAT), which is_private does not include.
_V4_PRIVATE: Final = _table(
    "0.0.0.0/8", "10.0.0.0/8", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.0.0.0/24",
    "192.0.0.170/31", "192.0.2.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24",
    "203.0.113.0/24", "240.0.0.0/4", "255.255.255.255/32",
)  # fmt: skip
_V4_EXCEPTIONS: Final = _table("192.0.0.9/32", "192.0.0.10/32")
_V4_NOT_GLOBAL: Final = (*_V4_PRIVATE, *_table("100.64.0.0/10"))
# The same for IPv6 (IPv6Address._constants; an IPv4-mapped address is judged as its IPv4
# address instead); is_global is "not private".
_V6_PRIVATE: Final = _table(
    "::1/128", "::/128", "::ffff:0:0/96", "64:ff9b:1::/48", "100::/64", "2001::/23", "2001:db8::/32",
    "2002::/16", "fc00::/7", "fe80::/10",
)  # fmt: skip
_V6_EXCEPTIONS: Final = _table(
    "2001:1::1/128", "2001:1::2/128", "2001:3::/32", "2001:4:112::/48", "2001:20::/28", "2001:30::/28",
)  # fmt: skip


_V4_NOT_GLOBAL_RANGES: Final = _ranges(_V4_NOT_GLOBAL, 32, _V4_EXCEPTIONS)
_V4_PRIVATE_RANGES: Final = _ranges(_V4_PRIVATE, 32, _V4_EXCEPTIONS)
_V6_PRIVATE_RANGES: Final = _ranges(_V6_PRIVATE, 128, _V6_EXCEPTIONS)


def is_global(address: IPAddress) -> bool:
    """``address.is_global`` by the IANA registries (see the module docstring), without the
    stdlib's per-address cache."""
    return is_global_number(isinstance(address, ipaddress.IPv4Address), int(address))


def is_global_number(v4: bool, number: int) -> bool:
    """:func:`is_global` for an address given as an integer, IPv4 if ``v4`` else IPv6."""
    if v4:
        starts, ends = _V4_NOT_GLOBAL_RANGES
    elif number >> 32 == 0xFFFF:  # IPv4-mapped (::ffff:a.b.c.d): not private as IPv4 means global
        number, (starts, ends) = number & 0xFFFFFFFF, _V4_PRIVATE_RANGES
    else:
        starts, ends = _V6_PRIVATE_RANGES
    i = bisect.bisect_right(starts, number) - 1
    return i < 0 or number > ends[i]


Networks = Sequence[ipaddress.IPv4Network | ipaddress.IPv6Network]


def client_ip(
    remote_addr: str | None, forwarded_for: str | None, trusted_proxies: int, forwarders: Networks = ()
) -> str | None:
    """The client's address: the peer, or the entry ``trusted_proxies`` from the right of
    X-Forwarded-For (entries further left are client-controlled and never trusted), in its
    canonical spelling; ``None`` if that is no IP address. While that address is in
    ``forwarders`` (a site's own proxy forwarding beacons), the entry to its left is taken instead."""
    return canonical_ip(_client_text(remote_addr, forwarded_for, trusted_proxies, forwarders))


def client_address(
    remote_addr: str | None, forwarded_for: str | None, trusted_proxies: int, forwarders: Networks = ()
) -> ParsedIP | None:
    """:func:`client_ip`'s address parsed (its ``text`` is what ``client_ip`` returns), for a
    caller that hands it to :meth:`~footfall_capture.enrich.pipeline.Draft.set_address`, so that the
    enrichment steps do not parse it a second time."""
    text = _client_text(remote_addr, forwarded_for, trusted_proxies, forwarders)
    return parse(text.strip()) if text else None


def _client_text(
    remote_addr: str | None, forwarded_for: str | None, trusted_proxies: int, forwarders: Networks
) -> str | None:
    if not forwarded_for or not (trusted_proxies or forwarders):
        return remote_addr
    chain = [*filter(None, map(str.strip, forwarded_for.split(","))), remote_addr]  # non-empty entries, stripped
    i = len(chain) - 1 - trusted_proxies if len(chain) > trusted_proxies else len(chain) - 1
    while i > 0 and forwarders and _within(chain[i], forwarders):
        i -= 1
    return chain[i]


def _within(text: str | None, networks: Networks) -> bool:
    address = parse_ip(text.strip()) if text else None
    return address is not None and any(address in network for network in networks)
