"""API authentication, site isolation and per-key rate limits.

``Authorization: Bearer <key>``: keys belong to one site, are stored hashed
(:class:`collector.models.ApiKey`), compared in constant time, carry scopes and can be
revoked. A key reading another site's data gets 404 — the same answer as for a site that
does not exist, so keys cannot probe which sites exist.
"""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import AuthenticationFailed, PermissionDenied
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle
from rest_framework.views import APIView

from collector.models import ApiKey
from collector.runtime import footfall_config


class ApiKeyAuthentication(BaseAuthentication):
    """Authenticates ``Authorization: Bearer <api key>``; ``request.auth`` is the :class:`ApiKey`."""

    def authenticate(self, request: Request) -> tuple[ApiKey, ApiKey] | None:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            return None
        scheme, _, key = header.partition(" ")
        if scheme.lower() != "bearer" or not key.strip():
            raise AuthenticationFailed("expected the header Authorization: Bearer <api key>")
        row = ApiKey.authenticate(key.strip())
        if row is None:
            raise AuthenticationFailed("unknown or revoked API key")
        return row, row

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="footfall"'


class SiteReadAccess(BasePermission):
    """A live key with the ``read`` scope, for the site named in the URL."""

    def has_permission(self, request: Request, view: APIView) -> bool:
        key = request.auth
        if not isinstance(key, ApiKey):
            return False  # DRF answers 401 with the WWW-Authenticate header above
        if key.site_id != view.kwargs.get("site_id"):
            raise Http404("no such site")
        if "read" not in key.scopes:
            raise PermissionDenied("this API key has no read scope")
        return True


class ApiKeyRateThrottle(SimpleRateThrottle):
    """Requests per minute per API key (``FOOTFALL_API_RATE_PER_MINUTE``), counted in the
    Django cache (Redis), so every web process shares the budget."""

    scope = "api_key"

    def get_rate(self) -> str:
        return f"{footfall_config().api_rate_per_minute}/min"

    def get_cache_key(self, request: Request, view: APIView) -> str | None:
        key = request.auth
        return f"ff:api:throttle:{key.prefix}" if isinstance(key, ApiKey) else None


class BearerKeyScheme(OpenApiAuthenticationExtension):
    """Declares the Bearer API key in the OpenAPI schema (drf-spectacular finds it by import)."""

    target_class = "api.auth.ApiKeyAuthentication"
    name = "apiKey"

    def get_security_definition(self, auto_schema: object) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "description": "an API key of the site, with the read scope"}
