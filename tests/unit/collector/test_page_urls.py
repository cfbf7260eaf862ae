"""PageUrls gives the URL and host Django's own request methods give for the same request."""

from __future__ import annotations

import pytest
from django.core.exceptions import DisallowedHost, ImproperlyConfigured
from django.http import HttpRequest
from django.http.request import split_domain_port
from django.test import RequestFactory

from footfall_capture.page_urls import PageUrls

rf = RequestFactory()
REQUESTS = {
    "plain": lambda: rf.get("/p?q=1", HTTP_HOST="example.com"),
    "tls": lambda: rf.get("/p", secure=True, HTTP_HOST="example.com"),
    "port": lambda: rf.get("/p", HTTP_HOST="example.com:8080"),
    "no host header": lambda: rf.get("/p", SERVER_NAME="example.com", SERVER_PORT="8000"),
    "no host header, tls": lambda: rf.get("/p", secure=True, SERVER_NAME="example.com", SERVER_PORT="443"),
    "forwarded host": lambda: rf.get("/p", HTTP_HOST="internal", HTTP_X_FORWARDED_HOST="example.com"),
    "forwarded port": lambda: rf.get("/p", SERVER_NAME="example.com", SERVER_PORT="80", HTTP_X_FORWARDED_PORT="81"),
    "proxy tls": lambda: rf.get("/p", HTTP_HOST="example.com", HTTP_X_FORWARDED_PROTO="https, http"),
    "proxy plain": lambda: rf.get("/p", secure=True, HTTP_HOST="example.com", HTTP_X_FORWARDED_PROTO="http"),
    "upper-case host": lambda: rf.get("/p", HTTP_HOST="EXAMPLE.com."),
    "dot segments": lambda: rf.get("/a/./b/../c", HTTP_HOST="example.com"),
    "double slash": lambda: rf.get("//evil.test/x", HTTP_HOST="example.com"),
    "non-ASCII path and query": lambda: rf.get("/caf\u00e9 x?q=\u00e9&r=a b", HTTP_HOST="example.com"),
    "escapes": lambda: rf.get("/%7Euser/a%20b?x=%41", HTTP_HOST="example.com"),
    "IPv6": lambda: rf.get("/p", HTTP_HOST="[::1]:8000"),
}
SETTINGS = {
    "defaults": {},
    "behind a proxy": {
        "USE_X_FORWARDED_HOST": True,
        "USE_X_FORWARDED_PORT": True,
        "SECURE_PROXY_SSL_HEADER": ("HTTP_X_FORWARDED_PROTO", "https"),
    },
}


def djangos(request: HttpRequest) -> tuple[str, str] | type[Exception]:
    try:
        return request.build_absolute_uri(), request.get_host()
    except DisallowedHost:
        return DisallowedHost


def ours(urls: PageUrls, request: HttpRequest) -> tuple[str, str] | type[Exception]:
    values = tuple(map(request.META.get, urls.keys))
    try:
        url, host = urls.url_and_host(request.path, values)
    except DisallowedHost:
        return DisallowedHost
    return url, host


@pytest.mark.parametrize("name", SETTINGS)
@pytest.mark.parametrize("allowed", [["example.com"], [".example.com", "[::1]"], ["*"]])
def test_the_url_and_host_are_djangos(settings, name: str, allowed: list[str]) -> None:
    """Same URL as build_absolute_uri(); the host is get_host()'s domain (no port, lower-case)."""
    settings.ALLOWED_HOSTS = allowed
    for setting, value in SETTINGS[name].items():
        setattr(settings, setting, value)
    urls = PageUrls()
    for label, make in REQUESTS.items():
        expected = djangos(make())
        got = ours(urls, make())
        if expected is DisallowedHost:
            assert got is DisallowedHost, label
        else:
            assert got == (expected[0], split_domain_port(expected[1])[0]), label
        assert ours(urls, make()) == got, label  # memoized: the same answer again


def test_debug_without_allowed_hosts_allows_localhost_only(settings) -> None:
    settings.DEBUG, settings.ALLOWED_HOSTS = True, []
    urls = PageUrls()
    assert ours(urls, rf.get("/", HTTP_HOST="localhost:8000")) == ("http://localhost:8000/", "localhost")
    assert ours(urls, rf.get("/", HTTP_HOST="example.com")) is DisallowedHost


@pytest.mark.parametrize("value", [("HTTP_X_FORWARDED_PROTO",), "HTTP_X_FORWARDED_PROTO", 443])
def test_a_malformed_proxy_ssl_header_is_refused_when_built(settings, value: object) -> None:
    settings.SECURE_PROXY_SSL_HEADER = value
    with pytest.raises(ImproperlyConfigured, match="SECURE_PROXY_SSL_HEADER"):
        PageUrls()
