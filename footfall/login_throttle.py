"""Password sign-in throttle: Django's model backend behind a per-account and per-address limit.

At most :data:`LOGIN_FAILURES_PER_MINUTE` failed passwords per account, and as many per client
address, in any 60 seconds. Past that, an attempt is refused before its password is checked
(so guessing gains nothing and costs no hashing), until the oldest failure leaves the window.
Every password form (the dashboard's sign-in and Django's admin) authenticates through this
backend. The failures are counted in Redis (the Django cache's database) by ``limits``, the
library the API's rate limit uses, so every web process shares them.
"""

from __future__ import annotations

import hashlib
import ipaddress
import time
from functools import cache
from typing import Any

from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from limits import RateLimitItemPerMinute
from limits.storage import RedisStorage
from limits.strategies import MovingWindowRateLimiter

from footfall.config import footfall_config
from footfall_capture.enrich.addresses import client_ip

LOGIN_FAILURES_PER_MINUTE = 5
# Set on the request when an attempt is refused: seconds until the next one may be checked.
WAIT_ATTRIBUTE = "footfall_login_wait_s"
_LIMIT = RateLimitItemPerMinute(LOGIN_FAILURES_PER_MINUTE)


@cache
def _limiter() -> MovingWindowRateLimiter:
    # A moving window, not a fixed one: a fixed minute would let 10 guesses through around its edge.
    return MovingWindowRateLimiter(RedisStorage(footfall_config().cache_url, key_prefix="ff:login"))


def throttle_keys(request: HttpRequest | None, username: str | None) -> list[str]:
    """What a sign-in attempt counts against: the account (a hash of its user name, case-folded)
    and, with a request, the client's address (an IPv6 client's /64, which one host usually holds)."""
    account = hashlib.sha256((username or "").casefold().encode()).hexdigest()[:32]
    keys = [f"account:{account}"]
    if request is not None:
        address = client_ip(
            request.META.get("REMOTE_ADDR"), request.META.get("HTTP_X_FORWARDED_FOR"), footfall_config().trusted_proxies
        )
        if address is not None:
            parsed = ipaddress.ip_address(address)
            if parsed.version == 6:
                address = str(ipaddress.ip_network(f"{address}/64", strict=False).network_address)
            keys.append(f"address:{address}")
    return keys


def seconds_to_wait(keys: list[str]) -> float:
    """0 when every key may fail once more; else the seconds until the first full key frees a slot."""
    limiter, waits = _limiter(), []
    for key in keys:
        if not limiter.test(_LIMIT, key):
            reset_at, _ = limiter.get_window_stats(_LIMIT, key)
            waits.append(max(1.0, reset_at - time.time()))
    return max(waits, default=0.0)


class ThrottledModelBackend(ModelBackend):
    """Django's :class:`ModelBackend`, refusing attempts past the limit without checking them."""

    def authenticate(
        self, request: HttpRequest | None, username: str | None = None, password: str | None = None, **kwargs: Any
    ) -> AbstractBaseUser | None:
        keys = throttle_keys(request, username)
        wait = seconds_to_wait(keys)
        if wait:
            if request is not None:
                setattr(request, WAIT_ATTRIBUTE, wait)
            # PermissionDenied (not None) stops Django from asking any other backend.
            raise PermissionDenied(f"too many failed sign-ins; try again in {wait:.0f} s")
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is None and password is not None:
            limiter = _limiter()
            for key in keys:
                limiter.hit(_LIMIT, key)
        return user
