"""Referrer step: ref_domain and ref_type from real referrer URLs."""

from __future__ import annotations

import dataclasses

import pytest

from footfall_capture.enrich.pipeline import Draft, SiteContext
from footfall_capture.enrich.referrer import (
    BRAND_TYPES,
    EMAIL_DOMAINS,
    SEARCH_DOMAINS,
    SOCIAL_DOMAINS,
    classify_referrer,
)
from footfall_capture.events import MAX_URL_LENGTH, REF_TYPES
from tests.unit.enrich.drafts import CTX, make_draft


def classify(referrer: str | None, *, host: str | None = "shop.example", ctx: SiteContext = CTX) -> Draft:
    return classify_referrer(make_draft(referrer=referrer, host=host), ctx)


def classified(referrer: str | None) -> tuple[str | None, str | None]:
    draft = classify(referrer)
    return draft.ref_domain, draft.ref_type


@pytest.mark.parametrize(
    ("referrer", "domain"),
    [
        ("https://www.google.com/", "google.com"),
        ("https://www.google.co.uk/", "google.co.uk"),
        ("https://www.google.de/search?q=wasserkocher", "google.de"),
        ("https://www.google.com/url?sa=t&url=https://shop.example/", "google.com"),
        ("https://www.bing.com/search?q=kettle&form=QBLH", "bing.com"),
        ("https://duckduckgo.com/", "duckduckgo.com"),
        ("https://search.yahoo.com/search?p=kettle", "search.yahoo.com"),
        ("https://search.yahoo.co.jp/search?p=kettle", "search.yahoo.co.jp"),
        ("https://yandex.ru/search/?text=kettle", "yandex.ru"),
        ("https://yandex.com.tr/search/?text=kettle", "yandex.com.tr"),
        ("https://www.baidu.com/link?url=abc", "baidu.com"),
        ("https://www.ecosia.org/search?q=kettle", "ecosia.org"),
        ("https://www.qwant.com/?q=kettle", "qwant.com"),
        ("https://search.brave.com/search?q=kettle", "search.brave.com"),
        ("https://www.startpage.com/sp/search", "startpage.com"),
        ("https://search.naver.com/search.naver?query=kettle", "search.naver.com"),
        ("https://search.seznam.cz/?q=kettle", "search.seznam.cz"),
        ("https://kagi.com/search?q=kettle", "kagi.com"),
    ],
)
def test_search_engines(referrer: str, domain: str) -> None:
    """Search engines, on any country domain, are "search"."""
    assert classified(referrer) == (domain, "search")


@pytest.mark.parametrize(
    ("referrer", "domain"),
    [
        ("https://www.facebook.com/", "facebook.com"),
        ("https://l.facebook.com/l.php?u=https%3A%2F%2Fshop.example%2F", "l.facebook.com"),
        ("https://m.facebook.com/", "m.facebook.com"),
        ("https://t.co/Ab3dEf9", "t.co"),
        ("https://twitter.com/someone/status/1", "twitter.com"),
        ("https://x.com/someone/status/1", "x.com"),
        ("https://www.linkedin.com/feed/", "linkedin.com"),
        ("https://lnkd.in/eXyZ", "lnkd.in"),
        ("https://www.reddit.com/r/tea/comments/abc/", "reddit.com"),
        ("https://old.reddit.com/r/tea/", "old.reddit.com"),
        ("https://news.ycombinator.com/item?id=42", "news.ycombinator.com"),
        ("https://l.instagram.com/?u=https%3A%2F%2Fshop.example", "l.instagram.com"),
        ("https://www.youtube.com/", "youtube.com"),
        ("https://www.pinterest.co.uk/pin/123/", "pinterest.co.uk"),
        ("https://www.tiktok.com/", "tiktok.com"),
        ("https://bsky.app/profile/someone.bsky.social", "bsky.app"),
        ("https://www.threads.net/@someone", "threads.net"),
        ("https://vk.com/away.php?to=x", "vk.com"),
        ("https://weibo.com/u/1", "weibo.com"),
    ],
)
def test_social_networks(referrer: str, domain: str) -> None:
    """Social networks and their link shorteners are "social"."""
    assert classified(referrer) == (domain, "social")


@pytest.mark.parametrize(
    ("referrer", "domain"),
    [
        ("https://mail.google.com/", "mail.google.com"),
        ("https://mail.google.com/mail/u/0/#inbox", "mail.google.com"),
        ("https://outlook.live.com/", "outlook.live.com"),
        ("https://outlook.office.com/mail/", "outlook.office.com"),
        ("https://mail.yahoo.com/d/folders/1", "mail.yahoo.com"),
        ("https://uk.mail.yahoo.com/", "uk.mail.yahoo.com"),
        ("https://mail.proton.me/u/0/inbox", "mail.proton.me"),
        ("https://e.mail.ru/inbox/", "e.mail.ru"),
        ("https://webmail.uni-example.de/", "webmail.uni-example.de"),
    ],
)
def test_webmail(referrer: str, domain: str) -> None:
    """Webmail hosts are "email", even on a search engine's domain."""
    assert classified(referrer) == (domain, "email")


@pytest.mark.parametrize(
    ("referrer", "domain"),
    [
        ("https://docs.google.com/document/d/1abc/edit", "docs.google.com"),
        ("https://www.google.com/maps/place/Some+Shop", "google.com"),
        ("https://accounts.google.com/", "accounts.google.com"),
        ("https://github.com/footfall/footfall", "github.com"),
        ("https://en.wikipedia.org/wiki/Kettle", "en.wikipedia.org"),
        ("https://blog.someone.dev/posts/tea", "blog.someone.dev"),
        ("http://localhost:3000/", "localhost"),
        ("http://192.0.2.10/page", "192.0.2.10"),
    ],
)
def test_other_sites(referrer: str, domain: str) -> None:
    """Any other site, Google's non-search products included, is "other"."""
    assert classified(referrer) == (domain, "other")


@pytest.mark.parametrize("referrer", [None, "", "   "])
def test_no_referrer_is_direct(referrer: str | None) -> None:
    """No referrer means a direct visit, with no domain and no stored referrer."""
    draft = classify(referrer)
    assert (draft.ref_domain, draft.ref_type, draft.referrer) == (None, "direct", None)


@pytest.mark.parametrize(
    ("referrer", "host", "ctx"),
    [
        ("https://shop.example/cart", "shop.example", CTX),
        ("https://www.shop.example/cart", "shop.example", CTX),
        ("https://shop.example/", "www.shop.example", CTX),
        ("https://blog.shop.example/post", "shop.example", CTX),
        ("https://SHOP.EXAMPLE:8443/", None, CTX),
        ("https://docs.acme.test/", "app.acme.test", SiteContext(site_id="acme", domains=("acme.test",), salt=b"s")),
        ("https://app.acme.test/", "app.acme.test", SiteContext(site_id="acme", salt=b"s")),
    ],
)
def test_own_hosts_are_internal(referrer: str, host: str | None, ctx: SiteContext) -> None:
    """The page's own host, the site's domains and their subdomains are "internal"."""
    assert classify(referrer, host=host, ctx=ctx).ref_type == "internal"


def test_a_lookalike_domain_is_not_internal() -> None:
    """A domain that merely ends with the site's name is someone else's."""
    draft = classify("https://evilshop.example/", host="shop.example")
    assert (draft.ref_domain, draft.ref_type) == ("evilshop.example", "other")


@pytest.mark.parametrize(
    ("referrer", "expected"),
    [
        ("android-app://com.google.android.gm/", ("mail.google.com", "email")),
        ("android-app://com.google.android.googlequicksearchbox/", ("google.com", "search")),
        ("android-app://com.linkedin.android/", ("linkedin.com", "social")),
        ("android-app://com.slack/", ("slack.com", "other")),
        ("android-app://org.example.unknown/", ("org.example.unknown", "other")),
        ("android-app://Com.Example.Chat/path", ("com.example.chat", "other")),
        ("android-app://nodots/", (None, "other")),
        ("android-app://com.example..x/", (None, "other")),
        ("android-app://1com.example/", (None, "other")),
        ("android-app:///", (None, "other")),
    ],
)
def test_android_app_referrers(referrer: str, expected: tuple[str | None, str]) -> None:
    """Known Android app packages map to their site; another app is its package id; a malformed
    id names nothing (labelled "(unknown)" in breakdowns)."""
    assert classified(referrer) == expected


@pytest.mark.parametrize(
    "referrer",
    ["about:blank", "not a url", "ftp://files.example/", "https://", "http://[::1", "https://exa mple.com/", "//x"],
)
def test_unparsable_referrers_are_other(referrer: str) -> None:
    """A referrer that is no http(s) URL with a host is "other" with no domain."""
    assert classified(referrer) == (None, "other")


def test_referrer_is_kept_as_given_but_for_its_private_parts() -> None:
    """The referrer is stored as given, less what a page URL would lose: the query parameters
    not kept (the site's own list applies), userinfo and fragment."""
    assert classify("https://News.example/a/B?ref=x").referrer == "https://News.example/a/B?ref=x"
    assert classify("https://www.google.com/search?q=Blue+Kettle&hl=en").referrer == "https://www.google.com/search"
    internal = "https://shop.example/account?email=a%40b.example&page=2&source=mail#top"
    assert classify(internal).referrer == "https://shop.example/account?source=mail"
    ctx = dataclasses.replace(CTX, query_params=frozenset({"page"}))
    assert classify(internal, ctx=ctx).referrer == "https://shop.example/account?page=2&source=mail"
    assert classify("https://me:secret@blog.example/p").referrer == "https://blog.example/p"
    assert classify("android-app://com.google.android.gm/").referrer == "android-app://com.google.android.gm/"


def test_long_referrer_is_truncated() -> None:
    """A referrer is cut to MAX_URL_LENGTH and still classified."""
    draft = classify("https://www.bing.com/" + "k" * 5000)
    assert len(draft.referrer or "") == MAX_URL_LENGTH
    assert draft.ref_type == "search"


def test_idn_referrer_host_is_compared_in_punycode() -> None:
    """A Unicode host is reported in its ASCII (IDNA) form."""
    assert classified("https://www.bücher.example/") == ("xn--bcher-kva.example", "other")


def test_tables_hold_lower_case_www_stripped_hosts() -> None:
    """Table entries are spelled the way hosts are looked up."""
    for table in (SEARCH_DOMAINS, SOCIAL_DOMAINS, EMAIL_DOMAINS):
        for entry in table:
            assert entry == entry.lower().strip()
            assert not entry.startswith("www.")
    assert set(BRAND_TYPES.values()) <= set(REF_TYPES)
