"""Privacy steps: Do-Not-Track (:func:`respect_dnt`) and the cookieless visitor id (:func:`assign_visitor_id`).

Contracts:

* :func:`respect_dnt` drops the event (:attr:`~footfall_capture.enrich.pipeline.DropReason.DO_NOT_TRACK`)
  when the request carried DNT and the site honours it. It runs first, so nothing is
  derived from a visitor who asked not to be tracked.
* :func:`assign_visitor_id` sets ``draft.visitor_id`` to 32 lower-case hex characters: a
  keyed BLAKE2b (16-byte digest) of the site id, the IP and the User-Agent, keyed with
  ``ctx.salt``, the site's salt of the day (:func:`site_salt`). With a salt that rotates daily
  and is then forgotten, the id counts unique visitors within a day and cannot be reversed to
  an IP or linked across days or sites. A site's salt makes that site's ids and no other's,
  so it is what a host site computing its own visitors' ids may be given; the day's salt,
  which makes every site's, stays with the server.
  Each input is length-prefixed so no two different inputs hash the same bytes
  (``("ab", "c")`` vs ``("a", "bc")``). The IP is hashed in its canonical form, so the
  spellings of one address (``::ffff:1.2.3.4`` and ``1.2.3.4``, upper/lower-case IPv6)
  give one visitor.
  Then it erases ``draft.ip`` (``None``) and ``draft.user_agent`` (``""``): the IP is used in
  memory only (invariant 5), so this step runs **last** among the steps that read them.
  A missing or over-long salt is a programming error and raises :class:`ValueError`.
"""

from __future__ import annotations

import hashlib
from typing import Final

from footfall_capture.enrich.addresses import ParsedIP, ipv4_mapped, parse
from footfall_capture.enrich.pipeline import Draft, Drop, DropReason, SiteContext

VISITOR_ID_BYTES: Final = 16  # 32 hex characters
MAX_SALT_BYTES: Final = hashlib.blake2b.MAX_KEY_SIZE  # 64: BLAKE2b's key limit
SITE_SALT_BYTES: Final = 32
SITE_SALT_PERSON: Final = b"footfall-site"  # BLAKE2b personalization: a site salt is no other digest


def site_salt(day_salt: bytes, site_id: str) -> bytes:
    """One site's salt of a day: the keyed BLAKE2b (32 bytes) of the site id under the day's salt."""
    if not day_salt:
        raise ValueError("site salt: the day's salt is empty; the collector must set today's secret salt")
    data = site_id.encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, key=day_salt, digest_size=SITE_SALT_BYTES, person=SITE_SALT_PERSON).digest()


def respect_dnt(draft: Draft, ctx: SiteContext) -> Draft:
    """Drop the event if the visitor sent DNT and the site respects it."""
    if draft.dnt and ctx.respect_dnt:
        raise Drop(DropReason.DO_NOT_TRACK)
    return draft


def visitor_id(salt: bytes, site_id: str, ip: str | None, user_agent: str) -> str:
    """The keyed hash of (site, IP, User-Agent) as 32 hex characters."""
    return _digest(salt, site_id, _canonical_ip(ip), user_agent)


def address_visitor_id(salt: bytes, site_id: str, address: ParsedIP | None, user_agent: str) -> str:
    """:func:`visitor_id` of an address parsed already (None: no address)."""
    return _digest(salt, site_id, "" if address is None else _hashed_text(address), user_agent)


def _digest(salt: bytes, site_id: str, canonical_ip: str, user_agent: str) -> str:
    if not salt:
        raise ValueError("visitor id: ctx.salt is empty; the collector must set today's secret salt")
    if len(salt) > MAX_SALT_BYTES:
        raise ValueError(f"visitor id: ctx.salt is {len(salt)} bytes, BLAKE2b keys are at most {MAX_SALT_BYTES}")
    buffer = bytearray()
    for part in (site_id, canonical_ip, user_agent):
        # surrogatepass: a lone surrogate must hash (distinctly), not crash the request.
        data = part.encode("utf-8", "surrogatepass")
        buffer += len(data).to_bytes(4, "big")
        buffer += data
    # One update of the framed parts: the same bytes as one update per piece, fewer calls.
    return hashlib.blake2b(buffer, key=salt, digest_size=VISITOR_ID_BYTES).hexdigest()


def assign_visitor_id(draft: Draft, ctx: SiteContext) -> Draft:
    """Set ``draft.visitor_id`` (unless its sender computed it with the site's salt), then erase
    the IP and the raw User-Agent from the draft."""
    if draft.visitor_id is None:
        parsed = draft.parsed_ip()  # parsed once, for geolocation and here
        canonical = _canonical_ip(draft.ip) if parsed is None else _hashed_text(parsed)
        draft.visitor_id = _digest(ctx.salt, draft.site_id, canonical, draft.user_agent)
    draft.forget_ip()
    return draft


def _canonical_ip(ip: str | None) -> str:
    """One spelling per address; text that is no IP is hashed as given (stripped).

    Not memoized: a cache keyed by IP would hold raw IPs in memory beyond their request.
    """
    if not ip:
        return ""
    text = ip.strip()
    parsed = parse(text)
    return text if parsed is None else _hashed_text(parsed)


def _hashed_text(parsed: ParsedIP) -> str:
    """The spelling hashed for an address: ``ipaddress``'s, an IPv4-mapped one as its IPv4 address."""
    mapped = ipv4_mapped(parsed)
    return parsed.text if mapped is None else mapped.text
