"""Geolocation step: the visitor's country (:func:`geolocate`).

Contract: ``draft.country`` becomes the ISO 3166-1 alpha-2 code (``^[A-Z]{2}$``) of
``draft.ip``, or ``None`` when the IP is missing, not an IP address, not globally routable
(private, loopback, link-local, CGNAT, documentation, reserved ...) or not in the database.
IPv4 and IPv6 are both looked up; an IPv4-mapped IPv6 address (``::ffff:1.2.3.4``, what a
dual-stack socket reports) is looked up as its IPv4 address. Nothing raises. The IP is only
read here; :func:`~footfall_capture.enrich.visitor.assign_visitor_id` erases it afterwards.

Database: geoip2fast's data file shipped inside the package (offline, no network). Its
default file is IPv4-only (IPv6 lookups answer "not found"), so the bundled
``geoip2fast-ipv6.dat.gz`` (IPv4 and IPv6) is loaded instead, once, lazily, under a lock
(slow to load and a few tens of MB; call :func:`load_database` at process start to pay it early).
geoip2fast keeps the loaded tables in module globals, not on the instance: nothing else in
the process may construct a ``GeoIP2Fast`` with another file, or it replaces ours.

The address is parsed strictly (:func:`~footfall_capture.enrich.addresses.parse_ip`, ``ipaddress``'s
rules) before the lookup because geoip2fast's own parser is lenient: it resolves "1.2.3"
(inet_aton shorthand) to a country and accepts trailing spaces, and it reports IPv4-mapped
addresses as reserved. Lookups are not memoized on purpose: a cache keyed by
IP would keep raw IPs in memory long after their request, against invariant 5 (which is
also why "globally routable" is :func:`~footfall_capture.enrich.addresses.is_global`, not the
stdlib's memoized property).
"""

from __future__ import annotations

import ipaddress
import re
import threading
from collections.abc import Callable
from typing import Final

from geoip2fast import GeoIP2Fast

from footfall_capture.enrich.addresses import IPAddress, ParsedIP, ipv4_mapped, is_global, is_global_number, parse
from footfall_capture.enrich.pipeline import Draft, SiteContext

DATA_FILE: Final = "geoip2fast-ipv6.dat.gz"  # bundled with the package; IPv4 + IPv6
_COUNTRY: Final = re.compile(r"[A-Z]{2}")  # geoip2fast answers "--" or "" for the unknown

_lock = threading.Lock()
_db: GeoIP2Fast | None = None
_by_int: Callable[[int], object] | None = None  # see _int_lookup


def load_database() -> GeoIP2Fast:
    """The process's geoip2fast database, loaded on first call (thread-safe)."""
    global _db, _by_int  # the one lazily loaded database of the process
    db = _db
    if db is None:
        with _lock:
            db = _db
            if db is None:
                db = GeoIP2Fast(geoip2fast_data_file=DATA_FILE)
                _by_int = _int_lookup(db)
                _db = db  # last: a reader that sees it sees _by_int too
    return db


def _int_lookup(db: GeoIP2Fast) -> Callable[[int], object] | None:
    """The country code for an address given as an integer, from the two steps inside
    ``GeoIP2Fast.lookup``, or ``None`` to use ``lookup`` itself.

    Why: ``lookup`` takes text, so each event paid for printing the address and parsing it
    back, plus a network string, a timing string and a result object it did not use: two
    thirds of geolocation's time. These two methods are not public API, so the shortcut is
    used only if it answers exactly like ``lookup`` on sample addresses of both families at
    load time; a geoip2fast release that changes them falls back to ``lookup``.
    """
    index, country = getattr(db, "_main_index_lookup", None), getattr(db, "_country_lookup", None)
    if not (callable(index) and callable(country)):
        return None

    def by_int(number: int) -> object:
        try:
            root, chunk, _first, last, _netlen = index(number)
            return None if number > last else country(root, chunk)[0]
        except (TypeError, ValueError, IndexError):  # geoip2fast returns its errors as values
            return None

    samples = ("81.2.69.142", "8.8.8.8", "1.0.0.1", "175.16.199.1", "2a02:cf40::1", "2001:4860:4860::8888", "10.0.0.1")
    for sample in samples:
        if _code(by_int(int(ipaddress.ip_address(sample)))) != _code(db.lookup(sample).country_code):
            return None
    return by_int


_UNSEEN = object()
_codes: dict[str, object] = {}  # geoip2fast's answer -> the country code or None (see _code)


def _code(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    code = _codes.get(value, _UNSEEN)
    if code is _UNSEEN:  # the database holds a few hundred distinct values: remember the verdicts
        code = _codes[value] = value if _COUNTRY.fullmatch(value) else None
    return code  # type: ignore[return-value]


def country_of(ip: str | None) -> str | None:
    """ISO country code of a globally routable ``ip``, else ``None``."""
    return country_of_parsed(parse(ip.strip()) if ip else None)


def country_of_address(address: IPAddress | None) -> str | None:
    """:func:`country_of` for an address parsed already."""
    if address is None:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if not is_global(address):  # not address.is_global: the stdlib memoizes it per address
        return None
    db = load_database()
    return _code(_by_int(int(address)) if _by_int is not None else db.lookup(str(address)).country_code)


def country_of_parsed(parsed: ParsedIP | None) -> str | None:
    """:func:`country_of_address` for a :class:`~footfall_capture.enrich.addresses.ParsedIP` (no
    ``ipaddress`` object: what the step uses)."""
    if parsed is None:
        return None
    parsed = ipv4_mapped(parsed) or parsed
    if not is_global_number(parsed.v4, parsed.number):
        return None
    db = load_database()
    return _code(_by_int(parsed.number) if _by_int is not None else db.lookup(parsed.text).country_code)


def geolocate(draft: Draft, ctx: SiteContext) -> Draft:
    """Set ``draft.country`` from ``draft.ip`` (``None`` when unknown)."""
    draft.country = country_of_parsed(draft.parsed_ip())
    return draft
