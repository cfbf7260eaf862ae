"""Referrer step: where a visit came from (:func:`classify_referrer`).

Contract: from ``draft.referrer`` set ``draft.ref_domain`` (the referrer's host, lower-case,
without a leading ``www.``) and ``draft.ref_type``, one of
:data:`~footfall_capture.events.REF_TYPES`:

* ``"direct"``: no referrer (``ref_domain`` ``None``);
* ``"internal"``: the referrer's host is the page's host (``draft.host``, so this step runs
  after :func:`~footfall_capture.enrich.urls.canonicalize_url`) or one of ``ctx.domains`` or a
  subdomain of them; ``www.`` is ignored on both sides;
* ``"email"``, ``"search"``, ``"social"``: the host is in the curated tables below;
* ``"other"``: any other site, or a referrer that is not an http(s) URL with a valid host.
  Android apps send ``android-app://<package>/`` referrers: the few well-known packages in
  :data:`ANDROID_APPS` are mapped to their site and type (Gmail → ``mail.google.com``,
  email); any other well-formed package id is its own ``ref_domain`` (``android-app://
  com.example.chat/`` → ``com.example.chat``, other). Anything else leaves ``ref_domain``
  ``None``: breakdowns label it ``(unknown)`` (``footfall.vocabulary.ref_label`` on the server),
  keeping ``(direct)`` for page views without a referrer.

``draft.referrer`` itself is kept as given, cut to :data:`~footfall_capture.events.MAX_URL_LENGTH`
(a blank referrer becomes ``None``), except that an http(s) referrer loses its userinfo, its
fragment and the query parameters a page URL would lose
(:func:`~footfall_capture.query_params.kept_query`): the site's previous page's ``?email=``
or a search engine's terms are no more stored than the page's own. Nothing raises.

Why the tables are kept by hand: the ``referer-parser`` package on PyPI (Snowplow's
referers.yml) has not been released since 2016, so it still lacks x.com, bsky.app,
threads.net, Brave Search, Kagi and the like, and vendoring its YAML means owning it
anyway. A short table reviewed here is easier to keep right. Matching is on host names,
walking from the full host up to the registrable domain (tldextract, with its bundled
public-suffix snapshot: no network, no disk cache), then on the registrable domain's
brand label for brands that live on many country domains (google.de, pinterest.co.uk).

Google is special: browsers send only the origin cross-site (``strict-origin-when-cross-
origin``), so a Google search referral is just ``https://www.google.com/``; requiring a
search path would miss nearly all of them. Instead www/bare Google hosts are search,
mail.google.* is email, and Google's other products (docs, maps, accounts, ...) are other.

Classification per host is memoized (bounded LRU): referrer hosts repeat far more than URLs;
so is the parsing of a referrer into host and path (the same few referrers arrive all day).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Final
from urllib.parse import urlsplit, urlunsplit

import tldextract

from footfall_capture.enrich.pipeline import Draft, SiteContext
from footfall_capture.events import MAX_URL_LENGTH
from footfall_capture.query_params import kept_query

# Exact hosts and domains (www-stripped, lower-case). A host matches an entry if it is the
# entry or a subdomain of it, so "uk.mail.yahoo.com" matches "mail.yahoo.com". The most
# specific entry wins: "mail.yahoo.com" (email) before the "yahoo" brand (search).
SEARCH_DOMAINS: Final[frozenset[str]] = frozenset(
    {
        "search.brave.com", "kagi.com", "startpage.com", "startpage.nl", "ecosia.org",
        "duckduckgo.com", "ddg.gg", "search.yahoo.com", "search.aol.com", "ask.com",
        "baidu.com", "m.baidu.com", "sogou.com", "so.com", "search.naver.com", "seznam.cz",
        "search.seznam.cz", "mojeek.com", "metager.org", "search.lilo.org", "swisscows.com",
        "presearch.com", "you.com", "search.daum.net", "coccoc.com", "yep.com",
    }
)  # fmt: skip
SOCIAL_DOMAINS: Final[frozenset[str]] = frozenset(
    {
        "facebook.com", "fb.com", "fb.me", "messenger.com", "t.co", "twitter.com", "x.com",
        "linkedin.com", "lnkd.in", "reddit.com", "redd.it", "news.ycombinator.com",
        "instagram.com", "youtube.com", "youtu.be", "pinterest.com", "pin.it", "tiktok.com",
        "bsky.app", "threads.net", "threads.com", "vk.com", "weibo.com", "weibo.cn", "t.me",
        "telegram.org", "web.whatsapp.com", "discord.com", "quora.com", "tumblr.com",
        "snapchat.com", "ok.ru", "xing.com", "producthunt.com", "lobste.rs", "twitch.tv",
        "line.me", "flipboard.com", "douban.com", "zhihu.com", "bilibili.com", "slashdot.org",
    }
)  # fmt: skip
EMAIL_DOMAINS: Final[frozenset[str]] = frozenset(
    {
        "mail.google.com", "inbox.google.com", "outlook.live.com", "outlook.office.com",
        "outlook.office365.com", "mail.yahoo.com", "mail.yahoo.co.jp", "mail.proton.me",
        "mail.protonmail.com", "mail.aol.com", "mail.yandex.ru", "mail.yandex.com",
        "e.mail.ru", "mail.zoho.com", "mail.zoho.eu", "app.fastmail.com", "mail.gmx.net",
        "navigator-bs.gmx.net", "navigator.gmx.net", "mail.gmx.com", "navigator.web.de",
        "app.tuta.com", "mail.tutanota.com", "mail.naver.com", "email.seznam.cz", "mail.qq.com",
        "wx.mail.qq.com", "mail.163.com", "mail.126.com", "mail.hey.com", "app.hey.com",
    }
)  # fmt: skip
# Brands on many public suffixes (google.co.uk, yandex.com.tr): matched on the label before it.
BRAND_TYPES: Final[dict[str, str]] = {
    "google": "search",
    "bing": "search",
    "yahoo": "search",
    "yandex": "search",
    "baidu": "search",
    "ecosia": "search",
    "qwant": "search",
    "startpage": "search",
    "duckduckgo": "search",
    "naver": "search",
    "facebook": "social",
    "pinterest": "social",
}
# Google hosts that are its search engine; other Google subdomains are products (docs, maps).
_GOOGLE_SEARCH_SUBDOMAINS: Final = frozenset({"", "www", "m", "images", "scholar", "books"})
# A webmail host of a provider not listed above (webmail.example.org, mail.example.com).
_WEBMAIL_LABELS: Final = frozenset({"mail", "webmail"})
# android-app://<package>/ referrers that Chrome on Android sends when a link opens from an app.
ANDROID_APPS: Final[dict[str, tuple[str, str]]] = {
    "com.google.android.gm": ("mail.google.com", "email"),
    "com.google.android.googlequicksearchbox": ("google.com", "search"),
    "com.google.android.apps.searchlite": ("google.com", "search"),
    "com.microsoft.office.outlook": ("outlook.live.com", "email"),
    "com.twitter.android": ("x.com", "social"),
    "com.facebook.katana": ("facebook.com", "social"),
    "com.instagram.android": ("instagram.com", "social"),
    "com.linkedin.android": ("linkedin.com", "social"),
    "com.reddit.frontpage": ("reddit.com", "social"),
    "org.telegram.messenger": ("t.me", "social"),
    "com.whatsapp": ("web.whatsapp.com", "social"),
    "com.slack": ("slack.com", "other"),
}

_TABLES: Final = (("email", EMAIL_DOMAINS), ("social", SOCIAL_DOMAINS), ("search", SEARCH_DOMAINS))
_HOST: Final = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,62})(?:\.[a-z0-9_-]{1,63})*")
_IPV6: Final = re.compile(r"[0-9a-f:.]+")
# An Android application id: two or more dot-separated Java identifiers (lower-cased here).
_PACKAGE: Final = re.compile(r"[a-z][a-z0-9_]*(?:\.[a-z0-9_]+)+")
_CACHE_SIZE: Final = 4096


def classify_referrer(draft: Draft, ctx: SiteContext) -> Draft:
    """Set ``draft.ref_domain`` and ``draft.ref_type`` from ``draft.referrer``."""
    referrer = draft.referrer
    if referrer is None or not referrer.strip():
        draft.referrer = None
        draft.ref_domain, draft.ref_type = None, "direct"
        return draft
    if len(referrer) > MAX_URL_LENGTH:
        draft.referrer = referrer = referrer[:MAX_URL_LENGTH]
    host, path = _host_and_path(referrer)
    if host is None:
        android = _android_app(referrer)
        draft.ref_domain, draft.ref_type = android if android else (None, "other")
        return draft
    draft.referrer = _without_private_parts(referrer, ctx.query_params)
    domain = host.removeprefix("www.")
    if _is_internal(domain, draft.host, ctx.domains):
        draft.ref_domain, draft.ref_type = domain, "internal"
        return draft
    ref_type, brand = _classify_host(domain)
    # Google Maps lives on www.google.com/maps: a place page, not a search result.
    if brand == "google" and ref_type == "search" and path.startswith("/maps"):
        ref_type = "other"
    draft.ref_domain, draft.ref_type = domain, ref_type
    return draft


@lru_cache(maxsize=_CACHE_SIZE)
def _without_private_parts(referrer: str, site_params: frozenset[str]) -> str:
    """An http(s) ``referrer`` (parsed by :func:`_host_and_path` already) without userinfo,
    fragment, or the query parameters :func:`kept_query` drops; unchanged if it has none."""
    parts = urlsplit(referrer.strip())
    if not parts.query and not parts.fragment and "@" not in parts.netloc:
        return referrer
    netloc = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, netloc, parts.path, kept_query(parts.query, site_params), ""))


@lru_cache(maxsize=_CACHE_SIZE)  # parsing is most of this step's cost, and referrers repeat
def _host_and_path(referrer: str) -> tuple[str | None, str]:
    """(lower-case host, path) of an http(s) referrer; host ``None`` if it is not one."""
    try:
        parts = urlsplit(referrer.strip())
        host = parts.hostname  # lower-case, without userinfo, port and IPv6 brackets
    except ValueError:  # e.g. "http://[::1" (unbalanced IPv6 literal)
        return None, ""
    if parts.scheme.lower() not in ("http", "https") or not host:
        return None, ""
    host = host.rstrip(".")
    if not host.isascii():
        try:  # a hand-typed or decoded IDN: compare in its wire (punycode) form
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            return None, ""
    if len(host) > 253 or not (_HOST.fullmatch(host) or (":" in host and _IPV6.fullmatch(host))):
        return None, ""
    return host, parts.path


def _android_app(referrer: str) -> tuple[str, str] | None:
    """(ref_domain, ref_type) for an ``android-app://<package>`` referrer: a known app's site,
    else the package id itself (type other); None when it is not one or the id is malformed."""
    text = referrer.strip()
    if not text[:14].lower().startswith("android-app://"):
        return None
    package = text[14:].partition("/")[0].lower()
    if package in ANDROID_APPS:
        return ANDROID_APPS[package]
    if len(package) <= 255 and _PACKAGE.fullmatch(package):
        return package, "other"
    return None


def _is_internal(domain: str, page_host: str | None, site_domains: tuple[str, ...]) -> bool:
    """Whether ``domain`` (www-stripped) is the page's own host or one of the site's domains."""
    if page_host is not None and domain == page_host.removeprefix("www."):
        return True
    for site in site_domains:
        own = site.strip().lower().rstrip(".").removeprefix("www.")
        if own and (domain == own or domain.endswith("." + own)):
            return True
    return False


@lru_cache(maxsize=_CACHE_SIZE)
def _classify_host(domain: str) -> tuple[str, str]:
    """(search / social / email / other, brand label) for a www-stripped, lower-case host."""
    parts = _extractor()(domain)
    registrable = registrable_domain(parts) or domain
    # Most specific first: the full host, then each parent down to the registrable domain.
    candidate = domain
    while True:
        for ref_type, table in _TABLES:
            if candidate in table:
                return ref_type, parts.domain
        if candidate == registrable or "." not in candidate:
            break
        candidate = candidate.partition(".")[2]
    brand_type = BRAND_TYPES.get(parts.domain) if parts.suffix else None
    first = parts.subdomain.partition(".")[0]
    if brand_type is None:
        return ("email" if first in _WEBMAIL_LABELS else "other"), parts.domain
    if parts.domain == "google":
        if first == "mail":
            return "email", "google"
        return ("search" if first in _GOOGLE_SEARCH_SUBDOMAINS else "other"), "google"
    return brand_type, parts.domain


def registrable_domain(parts: tldextract.tldextract.ExtractResult) -> str:
    """The domain under the public suffix ("google.co.uk"); "" for IPs and bare names."""
    # tldextract 5.x renamed registered_domain (deprecated, warns) to this attribute.
    name = getattr(parts, "top_domain_under_public_suffix", None)
    return name if name is not None else parts.registered_domain


@lru_cache(maxsize=1)
def _extractor() -> tldextract.TLDExtract:
    """The process's extractor, built on first use (loading its suffix-list snapshot is slow)."""
    # Offline by construction: no suffix-list URLs (the bundled snapshot is used) and no cache
    # directory (nothing is read from or written to disk besides the package's own data).
    extract = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)
    extract("example.com")  # build the suffix trie now, not racily inside the first requests
    return extract
