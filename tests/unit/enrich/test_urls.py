"""Page URL steps: UTM parameters and the canonical URL, host and path."""

from __future__ import annotations

import dataclasses

import pytest

from footfall_capture.enrich.urls import canonicalize_url, parse_utm, truncate_url
from footfall_capture.events import MAX_URL_LENGTH, Utm
from footfall_capture.query_params import TRACKING_PARAMS, is_tracking_param, site_query_params
from tests.unit.enrich.drafts import CTX, make_draft


def utm_of(url: str | None) -> Utm | None:
    return parse_utm(make_draft(url=url), CTX).utm


def canonical(url: str | None, keep: tuple[str, ...] = ()) -> tuple[str | None, str | None, str | None]:
    ctx = dataclasses.replace(CTX, query_params=site_query_params(keep))
    draft = canonicalize_url(make_draft(url=url), ctx)
    return draft.url, draft.host, draft.path


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "https://shop.example/?utm_source=newsletter&utm_medium=email&utm_campaign=black-friday"
            "&utm_term=kettle&utm_content=hero",
            Utm(source="newsletter", medium="email", campaign="black-friday", term="kettle", content="hero"),
        ),
        ("https://shop.example/p?utm_source=google&utm_medium=cpc", Utm(source="google", medium="cpc")),
        ("https://shop.example/p?utm_campaign=spring+sale%202025", Utm(campaign="spring sale 2025")),
        ("https://shop.example/p?UTM_Source=Twitter", Utm(source="Twitter")),
    ],
)
def test_utm_parameters_are_read(url: str, expected: Utm) -> None:
    """Each utm_* parameter lands in its Utm field, decoded."""
    assert utm_of(url) == expected


@pytest.mark.parametrize(
    "url",
    [
        None,
        "https://shop.example/products/42",
        "https://shop.example/?q=utm",
        "https://shop.example/?utm_source=&utm_medium=%20%20",
        "https://shop.example/?utm_id=123&utm_source_platform=x",
    ],
)
def test_no_utm_values_gives_none(url: str | None) -> None:
    """Without a non-blank utm_source/medium/campaign/term/content, utm stays None."""
    assert utm_of(url) is None


def test_utm_values_are_trimmed_and_truncated() -> None:
    """Values lose surrounding blanks and are cut to 256 characters."""
    utm = utm_of("https://shop.example/?utm_source=%20%20news%20&utm_campaign=" + "x" * 1000)
    assert utm == Utm(source="news", campaign="x" * 256)


def test_first_utm_value_wins() -> None:
    """A repeated parameter keeps its first value."""
    assert utm_of("https://shop.example/?utm_source=a&utm_source=b") == Utm(source="a")


def test_utm_is_read_before_canonicalize_strips_it() -> None:
    """parse_utm then canonicalize_url keeps the campaign and cleans the URL."""
    draft = canonicalize_url(parse_utm(make_draft(url="https://shop.example/?utm_source=x&ref=1"), CTX), CTX)
    assert (draft.utm, draft.url) == (Utm(source="x"), "https://shop.example/?ref=1")


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("HTTPS://Shop.Example/Products", ("https://shop.example/Products", "shop.example", "/Products")),
        ("http://shop.example:80/a", ("http://shop.example/a", "shop.example", "/a")),
        ("https://shop.example:443", ("https://shop.example/", "shop.example", "/")),
        ("https://shop.example:8443/a", ("https://shop.example:8443/a", "shop.example", "/a")),
        ("https://shop.example/a/./b/../c", ("https://shop.example/a/c", "shop.example", "/a/c")),
        (
            "https://shop.example/%7euser/caf%c3%a9",
            ("https://shop.example/~user/caf%C3%A9", "shop.example", "/~user/caf%C3%A9"),
        ),
        ("https://shop.example/a b", ("https://shop.example/a%20b", "shop.example", "/a%20b")),
        ("https://bücher.example/", ("https://xn--bcher-kva.example/", "xn--bcher-kva.example", "/")),
        ("https://shop.example./x", ("https://shop.example/x", "shop.example", "/x")),
        ("http://[2001:DB8::1]:8080/x", ("http://[2001:db8::1]:8080/x", "2001:db8::1", "/x")),
        ("  https://shop.example/x  ", ("https://shop.example/x", "shop.example", "/x")),
    ],
)
def test_urls_are_normalized(url: str, expected: tuple[str, str, str]) -> None:
    """Scheme and host lower-case, default port gone, dot segments resolved, escapes fixed."""
    assert canonical(url) == expected


def test_fragment_is_dropped() -> None:
    """The #fragment is client-side state, not a different page."""
    assert canonical("https://shop.example/docs#install")[0] == "https://shop.example/docs"


def test_userinfo_is_dropped() -> None:
    """Credentials embedded in a URL never reach the event."""
    assert canonical("https://admin:hunter2@shop.example/x") == ("https://shop.example/x", "shop.example", "/x")


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://shop.example/p?email=x%40y.example&utm_source=y", "https://shop.example/p"),
        ("https://shop.example/p?token=abc&q=my+search&page=2", "https://shop.example/p"),
        ("https://shop.example/p?b=2&ref=hn&a=1&source=Newsletter", "https://shop.example/p?ref=hn&source=Newsletter"),
        ("https://shop.example/p?REF=x&%72ef=y&ref", "https://shop.example/p?REF=x&ref=y&ref"),
        ("https://shop.example/p?gclid=Cj0KCQ&fbclid=IwAR2&ref_src=twsrc%5Etfw", "https://shop.example/p"),
        ("https://shop.example/p?", "https://shop.example/p"),
    ],
)
def test_only_the_kept_parameters_stay(url: str, expected: str) -> None:
    """By default only ref and source stay, in their order and spelling; the rest go."""
    assert canonical(url)[0] == expected


def test_a_site_keeps_its_own_parameters() -> None:
    """A site's list adds to ref and source, matched case-insensitively; others still go."""
    url = "https://shop.example/search?Q=kettle&email=x%40y.example&page=2&ref=ad&utm_source=y"
    assert canonical(url, keep=("q", "PAGE"))[0] == "https://shop.example/search?Q=kettle&page=2&ref=ad"
    assert canonical(url)[0] == "https://shop.example/search?ref=ad"


@pytest.mark.parametrize(
    ("names", "problem"),
    [
        (["gclid"], "tracking parameter"),
        (["utm_source"], "tracking parameter"),
        (["a b"], "not a query parameter name"),
        ([""], "not a query parameter name"),
        ([7], "not a query parameter name"),
        ([f"p{n}" for n in range(51)], "at most 50"),
    ],
)
def test_a_sites_list_is_refused_with_the_reason(names: list, problem: str) -> None:
    """Click ids and utm_* cannot be kept (they identify the visitor or are the campaign)."""
    with pytest.raises(ValueError, match=problem):
        site_query_params(names)


def test_a_sites_list_is_lower_cased_without_the_defaults() -> None:
    assert site_query_params([" Page ", "q", "ref", "items[]"]) == frozenset({"page", "q", "items[]"})


@pytest.mark.parametrize("key", ["fbclid", "gclid", "dclid", "gbraid", "wbraid", "msclkid", "twclid", "li_fat_id"])
def test_tracking_table_covers_the_common_click_ids(key: str) -> None:
    """The well-known click ids are in the table (lower-case)."""
    assert key in TRACKING_PARAMS
    assert is_tracking_param(key.upper())


@pytest.mark.parametrize(
    "url",
    [
        "ftp://shop.example/file",
        "javascript:alert(1)",
        "data:text/html,<h1>x</h1>",
        "file:///etc/passwd",
        "shop.example/no-scheme",
        "//shop.example/protocol-relative",
        "not a url",
        "",
        "http://",
        "https://exa mple.com/",
        "https://[::1/",
        "https://example.com:http/",
        "https://" + "a" * 300 + ".example/",
    ],
)
def test_non_http_urls_become_none(url: str) -> None:
    """Anything that is not an absolute http(s) URL with a valid host gives url/host/path None."""
    assert canonical(url) == (None, None, None)


def test_missing_url_leaves_host_and_path_none() -> None:
    """A draft without a URL (a server-side request event) gets no host or path."""
    assert canonical(None) == (None, None, None)


def test_long_urls_are_truncated() -> None:
    """URL and path are cut to MAX_URL_LENGTH."""
    url, _, path = canonical("https://shop.example/" + "a" * 5000)
    assert url is not None
    assert path is not None
    assert len(url) == MAX_URL_LENGTH
    assert len(path) == MAX_URL_LENGTH


@pytest.mark.parametrize("pad", [0, 1, 2])
def test_truncation_never_splits_a_percent_escape(pad: int) -> None:
    """Cutting backs off rather than leave a dangling %X."""
    url = "https://shop.example/" + "a" * (MAX_URL_LENGTH - 21 - pad) + "%C3%A9" * 10
    cut = truncate_url(url)
    assert len(cut) <= MAX_URL_LENGTH
    assert "%" not in cut[-2:]
