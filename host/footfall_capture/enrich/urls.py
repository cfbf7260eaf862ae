"""Page URL steps: campaign parameters (:func:`parse_utm`) and the canonical URL (:func:`canonicalize_url`).

Contracts:

* :func:`parse_utm` reads ``utm_source``, ``utm_medium``, ``utm_campaign``, ``utm_term`` and
  ``utm_content`` from the query of ``draft.url`` into a :class:`~footfall_capture.events.Utm`
  (``None`` when none of them has a value). Keys match case-insensitively, the first
  occurrence wins, values are trimmed and cut to 256 characters. It must run *before*
  :func:`canonicalize_url`, which strips these parameters from the URL.
* :func:`canonicalize_url` rewrites ``draft.url`` to one spelling per page so counts do not
  split across ``HTTP://Example.com:80/a/./b`` and ``http://example.com/a/b``: url-normalize
  lower-cases scheme and host, drops the default port, resolves dot segments and fixes
  percent-encoding; then the fragment and any userinfo (``user:password@`` must never reach
  the log) are removed, and of the query only the parameters in
  :data:`~footfall_capture.query_params.KEPT_PARAMS` and the site's own list
  (``ctx.query_params``) are kept, in their order and spelling: ``?email=``, ``?token=`` or
  a search term never reach the log. It sets ``draft.host`` (lower-case, no port) and
  ``draft.path`` (``"/"`` at least). Anything that is not an absolute ``http(s)`` URL
  with a plausible host sets ``url``, ``host`` and ``path`` to ``None``; nothing raises.
  The URL and path are cut to :data:`~footfall_capture.events.MAX_URL_LENGTH`, never inside a
  percent escape.

Both steps mutate and return the draft. Normalizing a URL and parsing its query are costly
and page URLs repeat a lot, so both results are memoized per raw URL (bounded LRUs; the
cached values are immutable).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Final
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import msgspec
from url_normalize import url_normalize

from footfall_capture.enrich.pipeline import Draft, SiteContext
from footfall_capture.events import MAX_URL_LENGTH, Utm
from footfall_capture.query_params import UTM_PREFIX, kept_query

UTM_MAX_LENGTH: Final = 256  # Utm fields are ShortText on the wire
MAX_RAW_URL_LENGTH: Final = 4 * MAX_URL_LENGTH  # input beyond this is ignored before parsing

_UTM_FIELDS: Final = ("source", "medium", "campaign", "term", "content")

# After url-normalize the host is lower-case ASCII (IDNA): DNS labels, or an IPv6 literal.
# Anything else (spaces, empty labels, stray characters) means the input was not a URL.
_HOST: Final = re.compile(r"(?:[a-z0-9_](?:[a-z0-9_-]{0,62})(?:\.[a-z0-9_-]{1,63})*\.?|\[[0-9a-f:.]+\])")
_PORT: Final = re.compile(r"\d{1,5}")
_HTTP_PREFIXES: Final = ("http://", "https://")
_CANONICAL_CACHE_SIZE: Final = 4096


def parse_utm(draft: Draft, ctx: SiteContext) -> Draft:
    """Fill ``draft.utm`` from the ``utm_*`` query parameters of ``draft.url``."""
    url = draft.url
    # Fast path: most page views carry no campaign parameters, so skip the query parsing.
    draft.utm = _utm(url[:MAX_RAW_URL_LENGTH]) if url and "utm" in url.lower() else None
    return draft


def canonicalize_url(draft: Draft, ctx: SiteContext) -> Draft:
    """Rewrite ``draft.url`` to its canonical form and set ``draft.host`` and ``draft.path``."""
    if draft.url is None:
        draft.host = draft.path = None
        return draft
    # Bound the work and the cache's memory whatever the caller accepted (the beacon takes
    # 8 KiB); a URL that long would be cut to MAX_URL_LENGTH anyway.
    draft.url, draft.host, draft.path = _canonical(draft.url[:MAX_RAW_URL_LENGTH], ctx.query_params)
    return draft


def truncate_url(url: str, limit: int = MAX_URL_LENGTH) -> str:
    """``url`` cut to ``limit`` characters, backing off so no ``%XX`` escape is split."""
    if len(url) <= limit:
        return url
    cut = url[:limit]
    tail = cut.rfind("%", max(0, limit - 2))
    return cut[:tail] if tail != -1 else cut


@lru_cache(maxsize=_CANONICAL_CACHE_SIZE)
def _canonical(raw: str, site_params: frozenset[str]) -> tuple[str | None, str | None, str | None]:
    """(url, host, path) for one raw page URL keeping the query parameters
    :func:`~footfall_capture.query_params.kept_query` keeps, or all ``None`` when it is not an
    http(s) URL."""
    text = raw.strip()
    # Decide on the raw scheme: url-normalize would turn "example.com/x" or "not a url" into
    # an https URL, and javascript:/data:/file: URLs are not pages we count.
    if not text[:8].lower().startswith(_HTTP_PREFIXES):
        return None, None, None
    try:
        normalized = url_normalize(text)
        if not normalized:
            return None, None, None
        parts = urlsplit(normalized)
    except (ValueError, UnicodeError):  # bad IPv6 literal, label too long for IDNA, surrogates
        return None, None, None
    if parts.scheme not in ("http", "https"):
        return None, None, None
    # Userinfo is dropped: credentials in a URL must never be stored.
    hostport = parts.netloc.rpartition("@")[2]
    host, port = _split_port(hostport)
    if host is None or len(host) > 253 or not _HOST.fullmatch(host):
        return None, None, None
    host = host.rstrip(".")  # "example.com." is example.com (the regex guarantees a label first)
    netloc = f"{host}:{port}" if port else host
    query = kept_query(parts.query, site_params)
    path = parts.path or "/"
    url = truncate_url(urlunsplit((parts.scheme, netloc, path, query, "")))
    # The event's host is the bare name: an IPv6 literal loses its brackets, like urllib's .hostname.
    bare_host = host[1:-1] if host.startswith("[") else host
    return url, bare_host, truncate_url(path)


@lru_cache(maxsize=_CANONICAL_CACHE_SIZE)
def _utm(url: str) -> Utm | None:
    """The campaign parameters of one raw URL (Utm is immutable, so results are shared)."""
    try:
        query = urlsplit(url).query
    except ValueError:  # e.g. a broken IPv6 literal; canonicalize_url will drop the URL
        return None
    found: dict[str, str] = {}
    for key, value in parse_qsl(query):
        name = key.strip().lower()
        if not name.startswith(UTM_PREFIX):
            continue
        field = name[len(UTM_PREFIX) :]
        text = value.strip()[:UTM_MAX_LENGTH].strip()
        if field in _UTM_FIELDS and field not in found and text:
            found[field] = text
    return msgspec.convert(found, Utm) if found else None  # validated: the event is built from it


def _split_port(hostport: str) -> tuple[str | None, str]:
    """(host, port) from ``host[:port]``; host ``None`` when the port is not a number."""
    if hostport.startswith("["):  # IPv6 literal: the port follows the closing bracket
        end = hostport.find("]")
        if end == -1:
            return None, ""
        host, rest = hostport[: end + 1], hostport[end + 1 :]
        if not rest:
            return host, ""
        if rest[0] != ":":
            return None, ""
        port = rest[1:]
    else:
        host, _, port = hostport.partition(":")
    if port and not _PORT.fullmatch(port):
        return None, ""
    return host, port
