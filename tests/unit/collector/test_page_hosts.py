"""A site that lists its domains takes events only from pages on them or their subdomains."""

from __future__ import annotations

import pytest

from collector.sites import SiteInfo, page_host


def site(*domains: str) -> SiteInfo:
    return SiteInfo("shop", domains, frozenset(), "UTC", "daily", True, False)


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/",
        "http://EXAMPLE.com./x",
        "https://www.example.com:8443/a?b=c",
        "https://a.b.example.com/",
        "https://user@example.com/",
    ],
)
def test_pages_on_the_domains_or_subdomains_pass(url: str) -> None:
    assert site("example.com").page_host_problem(url) is None


@pytest.mark.parametrize(
    "url",
    [
        "https://evil.test/",
        "https://notexample.com/",
        "https://example.com.evil.test/",
        "https://evil.test/?u=https://example.com/",
        "https://example.com@evil.test/",
        "javascript:alert(1)//example.com",
        "ftp://example.com/",
        "https://[::1/",
        "//example.com/",
    ],
)
def test_other_hosts_are_refused_with_the_host_named(url: str) -> None:
    problem = site("example.com").page_host_problem(url)
    assert problem is not None
    host = page_host(url)
    assert host is None or host in problem


def test_a_missing_url_is_refused_unless_allowed() -> None:
    assert site("example.com").page_host_problem(None) is not None
    assert site("example.com").page_host_problem("") is not None
    assert site("example.com").page_host_problem(None, url_required=False) is None
    assert site("example.com").page_host_problem("https://evil.test/", url_required=False) is not None


def test_a_site_without_domains_takes_any_page() -> None:
    assert site().page_host_problem("https://anything.test/") is None
    assert site().page_host_problem(None) is None


def test_a_listed_port_does_not_narrow_the_host() -> None:
    assert site("localhost:8000").page_host_problem("http://localhost:8000/") is None
    assert site("localhost:8000").page_host_problem("http://evil.test:8000/") is not None
