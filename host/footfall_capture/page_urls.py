"""A tracked page's absolute URL and host, worked out off the request thread.

:class:`PageUrls` applies Django's rules for ``request.scheme`` (``SECURE_PROXY_SSL_HEADER``),
``request.get_host()`` (``ALLOWED_HOSTS``, ``USE_X_FORWARDED_HOST``, ``USE_X_FORWARDED_PORT``,
raising ``DisallowedHost``) and ``request.build_absolute_uri()`` to META values the request
thread copied, with Django's own helpers for the parts that are not glue; the tests compare
its answers with Django's for the same requests. Settings are read once, when it is built.
"""

from __future__ import annotations

from urllib.parse import urljoin

from django.conf import settings
from django.core.exceptions import DisallowedHost, ImproperlyConfigured
from django.http.request import split_domain_port, validate_host
from django.utils.encoding import escape_uri_path, iri_to_uri

# The META keys the URL depends on, in the order of PageUrls.keys; the proxy header follows.
_KEYS = ("QUERY_STRING", "HTTP_HOST", "HTTP_X_FORWARDED_HOST", "HTTP_X_FORWARDED_PORT", "SERVER_NAME",
         "SERVER_PORT", "wsgi.url_scheme")  # fmt: skip
_CACHE_SIZE = 4096  # (path, values) entries: a site's pages and hosts repeat


class PageUrls:
    """``url_and_host(path, values)`` for requests whose META values for :attr:`keys` are ``values``."""

    def __init__(self) -> None:
        self.forwarded_host = settings.USE_X_FORWARDED_HOST
        self.forwarded_port = settings.USE_X_FORWARDED_PORT
        self.allowed_hosts = settings.ALLOWED_HOSTS
        if settings.DEBUG and not self.allowed_hosts:
            self.allowed_hosts = [".localhost", "127.0.0.1", "[::1]"]
        self.proxy_header: tuple[str, str] | None = None
        if settings.SECURE_PROXY_SSL_HEADER:
            try:
                name, secure_value = settings.SECURE_PROXY_SSL_HEADER
            except (TypeError, ValueError):  # an error at start, not in every request
                raise ImproperlyConfigured("SECURE_PROXY_SSL_HEADER must be a tuple of two values") from None
            self.proxy_header = (name, secure_value)
        self.keys = _KEYS + ((self.proxy_header[0],) if self.proxy_header else ())
        self._memo: dict[tuple[str, tuple[str | None, ...]], tuple[str, str]] = {}

    def url_and_host(self, path: str, values: tuple[str | None, ...]) -> tuple[str, str]:
        """The page's absolute URL and its host name (lower-case, no port); raises
        ``DisallowedHost`` as ``get_host()`` would. Memoized; failures are not."""
        found = self._memo.get((path, values))
        if found is None:
            meta = dict(zip(self.keys, values, strict=True))
            scheme = self._scheme(meta)
            host = self._host(meta, scheme)
            found = (self._absolute_url(f"{scheme}://{host}", path, meta["QUERY_STRING"]), split_domain_port(host)[0])
            if len(self._memo) >= _CACHE_SIZE:
                self._memo.clear()  # crude but bounded; refilled from the pages that still come
            self._memo[(path, values)] = found
        return found

    def _scheme(self, meta: dict[str, str | None]) -> str:
        if self.proxy_header is not None:
            name, secure_value = self.proxy_header
            value = meta[name]
            if value is not None:
                return "https" if value.split(",", 1)[0].strip() == secure_value else "http"
        return meta["wsgi.url_scheme"] or "http"  # no WSGI scheme: HttpRequest's default

    def _host(self, meta: dict[str, str | None], scheme: str) -> str:
        if self.forwarded_host and meta["HTTP_X_FORWARDED_HOST"] is not None:
            host = meta["HTTP_X_FORWARDED_HOST"]
        elif meta["HTTP_HOST"] is not None:
            host = meta["HTTP_HOST"]
        else:  # PEP 333's reconstruction
            host = meta["SERVER_NAME"] or ""
            forwarded_port = meta["HTTP_X_FORWARDED_PORT"]
            port = forwarded_port if self.forwarded_port and forwarded_port is not None else meta["SERVER_PORT"]
            if str(port) != ("443" if scheme == "https" else "80"):
                host = f"{host}:{port}"
        domain, _port = split_domain_port(host)
        if not (domain and validate_host(domain, self.allowed_hosts)):
            raise DisallowedHost(f"Invalid HTTP_HOST header: {host!r}")
        return host

    @staticmethod
    def _absolute_url(origin: str, path: str, query: str | None) -> str:
        location = "//" + escape_uri_path(path) + ("?" + iri_to_uri(query) if query else "")
        if "/./" in path or "/../" in path:  # build_absolute_uri resolves dot segments so
            return iri_to_uri(urljoin(origin + path, location))
        return iri_to_uri(origin + location.removeprefix("//"))
