"""API authentication, site isolation and per-key rate limits.

``Authorization: Bearer <key>``: keys belong to one site, are stored hashed
(:class:`footfall.models.ApiKey`), compared in constant time, carry scopes, may expire and
can be revoked. A key reading another site's data gets 404 — the same answer as for a site that
does not exist, so keys cannot probe which sites exist.

A verified key is remembered by each web process for :data:`KEY_CACHE_TTL_S` seconds (by the
SHA-256 of the key, never the key itself), so a request does not pay a database query for
its key. A revocation therefore takes effect at once in the process that revokes and within that time everywhere else;
an expiry takes effect at once everywhere (a remembered key is checked against it).
"""

from __future__ import annotations

import hashlib
import threading
import time
from functools import cache
from typing import TYPE_CHECKING

from cachetools import TTLCache
from django.db.models.signals import post_delete, post_save
from django.http import Http404
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from limits import RateLimitItemPerMinute
from limits.storage import RedisStorage
from limits.strategies import SlidingWindowCounterRateLimiter
from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import AuthenticationFailed, PermissionDenied
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from footfall.config import footfall_config
from footfall.models import EXPORT_SCOPE, ApiKey, Site

if TYPE_CHECKING:
    # Annotations only: DRF imports this module (DEFAULT_AUTHENTICATION_CLASSES) while it is
    # still importing rest_framework.views, so a run-time import here would be circular.
    from rest_framework.views import APIView

KEY_CACHE_TTL_S = 5.0
_verified: TTLCache[bytes, ApiKey] = TTLCache(maxsize=10_000, ttl=KEY_CACHE_TTL_S)
_verified_lock = threading.Lock()


def verified_key(key: str) -> ApiKey | None:
    """The live :class:`ApiKey` for ``key`` (from this process's short-lived memory of
    verified keys, else the database), or None. Unknown keys are not remembered."""
    digest = hashlib.sha256(key.encode()).digest()
    with _verified_lock:
        row = _verified.get(digest)
    if row is not None:
        return row if row.is_live() else None
    row = ApiKey.authenticate(key)
    if row is not None:
        with _verified_lock:
            _verified[digest] = row
    return row


def forget_verified_keys(**_: object) -> None:
    """Drop every remembered key (on any change of a key in this process, e.g. a revocation, or
    of a site, whose settings a key carries; other processes see either within the cache's TTL)."""
    with _verified_lock:
        _verified.clear()


post_save.connect(forget_verified_keys, sender=ApiKey, dispatch_uid="api.auth.forget_verified_keys")
post_delete.connect(forget_verified_keys, sender=ApiKey, dispatch_uid="api.auth.forget_verified_keys_delete")
post_save.connect(forget_verified_keys, sender=Site, dispatch_uid="api.auth.forget_verified_keys_site")


class ApiKeyAuthentication(BaseAuthentication):
    """Authenticates ``Authorization: Bearer <api key>``; ``request.auth`` is the :class:`ApiKey`."""

    def authenticate(self, request: Request) -> tuple[ApiKey, ApiKey] | None:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            return None
        scheme, _, key = header.partition(" ")
        if scheme.lower() != "bearer" or not key.strip():
            raise AuthenticationFailed("expected the header Authorization: Bearer <api key>")
        row = verified_key(key.strip())
        if row is None:
            raise AuthenticationFailed("unknown, revoked or expired API key")
        return row, row

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="footfall"'


class SiteReadAccess(BasePermission):
    """A live key with the ``read`` scope (:attr:`scope`), for the site named in the URL."""

    scope = "read"

    def has_permission(self, request: Request, view: APIView) -> bool:
        key = request.auth
        if not isinstance(key, ApiKey):
            return False  # DRF answers 401 with the WWW-Authenticate header above
        if key.site_id != view.kwargs.get("site_id"):
            raise Http404("no such site")
        if self.scope not in key.scopes:
            raise PermissionDenied(f"this API key has no {self.scope} scope")
        return True


class SiteExportAccess(SiteReadAccess):
    """A live key with the ``export`` scope, for the site named in the URL."""

    scope = EXPORT_SCOPE


@cache
def _rate_limiter() -> SlidingWindowCounterRateLimiter:
    # The Django cache's Redis database, as DRF's cache-based throttle used before.
    return SlidingWindowCounterRateLimiter(RedisStorage(footfall_config().cache_url, key_prefix="ff:api:rate"))


class ApiKeyRateThrottle(BaseThrottle):
    """``FOOTFALL_API_RATE_PER_MINUTE`` requests per API key, as a sliding window counted in
    Redis by ``limits`` (one script call per request, whatever the rate), so every web
    process shares the budget. Replaces DRF's cache throttle, which read and wrote a list of
    every request time of the last minute per request (two round trips, growing with the rate)."""

    def __init__(self) -> None:
        self._wait: float | None = None

    def allow_request(self, request: Request, view: APIView) -> bool:
        key = request.auth
        if not isinstance(key, ApiKey):
            return True
        item = RateLimitItemPerMinute(footfall_config().api_rate_per_minute)
        limiter = _rate_limiter()
        if limiter.hit(item, key.prefix):
            return True
        reset_at, _ = limiter.get_window_stats(item, key.prefix)
        self._wait = max(1.0, reset_at - time.time())
        return False

    def wait(self) -> float | None:
        return self._wait


class BearerKeyScheme(OpenApiAuthenticationExtension):
    """Declares the Bearer API key in the OpenAPI schema (drf-spectacular finds it by import)."""

    target_class = "api.auth.ApiKeyAuthentication"
    name = "apiKey"

    def get_security_definition(self, auto_schema: object) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "description": "an API key of the site, with the read scope"}
