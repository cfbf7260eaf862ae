"""Geolocation step: the visitor's country (:func:`geolocate`).

Contract: ``draft.country`` becomes the ISO 3166-1 alpha-2 code (``^[A-Z]{2}$``) of
``draft.ip``, or ``None`` when the IP is missing, not an IP address, not globally routable
(private, loopback, link-local, CGNAT, documentation, reserved ...) or not in the database.
IPv4 and IPv6 are both looked up; an IPv4-mapped IPv6 address (``::ffff:1.2.3.4``, what a
dual-stack socket reports) is looked up as its IPv4 address. Nothing raises. The IP is only
read here; :func:`~collector.enrich.visitor.assign_visitor_id` erases it afterwards.

Database: geoip2fast's data file shipped inside the package (offline, no network). Its
default file is IPv4-only (IPv6 lookups answer "not found"), so the bundled
``geoip2fast-ipv6.dat.gz`` (IPv4 and IPv6) is loaded instead, once, lazily, under a lock
(~0.2 s and a few tens of MB; call :func:`load_database` at process start to pay it early).
geoip2fast keeps the loaded tables in module globals, not on the instance: nothing else in
the process may construct a ``GeoIP2Fast`` with another file, or it replaces ours.

The address is parsed with :mod:`ipaddress` before the lookup because geoip2fast's own
parser is lenient: it resolves "1.2.3" (inet_aton shorthand) to a country and accepts
trailing spaces, and it reports IPv4-mapped addresses as reserved. Lookups are not
memoized on purpose (~7 µs each): a cache keyed by IP would keep raw IPs in memory long
after their request, against invariant 5.
"""

from __future__ import annotations

import ipaddress
import re
import threading
from typing import Final

from geoip2fast import GeoIP2Fast

from collector.enrich.pipeline import Draft, SiteContext

DATA_FILE: Final = "geoip2fast-ipv6.dat.gz"  # bundled with the package; IPv4 + IPv6
_COUNTRY: Final = re.compile(r"[A-Z]{2}")  # geoip2fast answers "--" or "" for the unknown

_lock = threading.Lock()
_db: GeoIP2Fast | None = None


def load_database() -> GeoIP2Fast:
    """The process's geoip2fast database, loaded on first call (thread-safe)."""
    global _db  # the one lazily loaded database of the process
    db = _db
    if db is None:
        with _lock:
            db = _db
            if db is None:
                db = _db = GeoIP2Fast(geoip2fast_data_file=DATA_FILE)
    return db


def country_of(ip: str | None) -> str | None:
    """ISO country code of a globally routable ``ip``, else ``None``."""
    if not ip:
        return None
    try:
        address = ipaddress.ip_address(ip.strip())
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if not address.is_global:
        return None
    code = load_database().lookup(str(address)).country_code
    return code if isinstance(code, str) and _COUNTRY.fullmatch(code) else None


def geolocate(draft: Draft, ctx: SiteContext) -> Draft:
    """Set ``draft.country`` from ``draft.ip`` (``None`` when unknown)."""
    draft.country = country_of(draft.ip)
    return draft
