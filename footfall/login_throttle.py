"""Password sign-in throttle: Django's model backend behind limits that slow guessing and lock
nobody out.

Failed passwords are counted, as django-axes counts them by default, per (account, address):
past :data:`PAIR_FAILURES_PER_MINUTE` in any 60 seconds that address is refused for that
account. Per address across accounts (password spraying): past
:data:`ADDRESS_FAILURES_PER_MINUTE`, that address is refused for every account. Per account
across addresses (a distributed guess): past :data:`ACCOUNT_FAILURES_PER_MINUTE`, addresses
that never signed in to it are refused, while one that did (a known-good address, remembered
for :data:`KNOWN_GOOD_DAYS` days) is still let through: nobody can lock a user out by failing
on purpose from elsewhere. A refused attempt's password is not checked (guessing gains
nothing and costs no hashing). Every password form (the dashboard's sign-in and Django's
admin) authenticates through this backend. The failures are counted in Redis (the Django
cache's database) by ``limits``, the library the API's rate limit uses, so every web process
shares them; known-good addresses are kept in the Django cache, as digests.
"""

from __future__ import annotations

import hashlib
import ipaddress
import time
from functools import cache
from typing import Any

from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.cache import cache as django_cache
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from limits import RateLimitItemPerMinute
from limits.storage import RedisStorage
from limits.strategies import MovingWindowRateLimiter

from footfall.config import footfall_config
from footfall_capture.enrich.addresses import client_ip

PAIR_FAILURES_PER_MINUTE = 5
ADDRESS_FAILURES_PER_MINUTE = 20
ACCOUNT_FAILURES_PER_MINUTE = 30
KNOWN_GOOD_DAYS = 90
# Set on the request when an attempt is refused: seconds until the next one may be checked.
WAIT_ATTRIBUTE = "footfall_login_wait_s"
_PAIR = RateLimitItemPerMinute(PAIR_FAILURES_PER_MINUTE)
_ADDRESS = RateLimitItemPerMinute(ADDRESS_FAILURES_PER_MINUTE)
_ACCOUNT = RateLimitItemPerMinute(ACCOUNT_FAILURES_PER_MINUTE)


@cache
def _limiter() -> MovingWindowRateLimiter:
    # A moving window, not a fixed one: a fixed minute would let 10 guesses through around its edge.
    return MovingWindowRateLimiter(RedisStorage(footfall_config().cache_url, key_prefix="ff:login"))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def client_address(request: HttpRequest | None) -> str | None:
    """The client's address as the throttle counts it (an IPv6 client's /64, which one host
    usually holds), or None without a request."""
    if request is None:
        return None
    address = client_ip(
        request.META.get("REMOTE_ADDR"), request.META.get("HTTP_X_FORWARDED_FOR"), footfall_config().trusted_proxies
    )
    if address is not None and ipaddress.ip_address(address).version == 6:
        address = str(ipaddress.ip_network(f"{address}/64", strict=False).network_address)
    return address


def throttle_keys(account: str, address: str | None) -> dict[str, tuple[RateLimitItemPerMinute, str]]:
    """What a sign-in attempt counts against, by kind: the (account, address) pair, the address
    and the account (digests: the cache never holds a user name or an address)."""
    keys = {"account": (_ACCOUNT, f"account:{account}")}
    if address is not None:
        keys["pair"] = (_PAIR, f"pair:{account}:{_digest(address)}")
        keys["address"] = (_ADDRESS, f"address:{_digest(address)}")
    return keys


def _wait(limit: RateLimitItemPerMinute, key: str) -> float:
    """0 when ``key`` may fail once more under ``limit``; else the seconds until it may."""
    limiter = _limiter()
    if limiter.test(limit, key):
        return 0.0
    reset_at, _ = limiter.get_window_stats(limit, key)
    return max(1.0, reset_at - time.time())


def _known_good_key(account: str, address: str) -> str:
    return f"ff:login:good:{account}:{_digest(address)}"


def seconds_to_wait(keys: dict[str, tuple[RateLimitItemPerMinute, str]], known_good_key: str | None) -> float:
    """0 when an attempt counted against ``keys`` (:func:`throttle_keys`) may be checked; else the
    seconds until it may. ``known_good_key``: where the address would be remembered, if any."""
    waits = [_wait(*keys[kind]) for kind in ("pair", "address") if kind in keys]
    account_wait = _wait(*keys["account"])
    if account_wait and not (known_good_key is not None and django_cache.get(known_good_key)):
        waits.append(account_wait)  # a distributed guess: only addresses that signed in before get through
    return max(waits, default=0.0)


class ThrottledModelBackend(ModelBackend):
    """Django's :class:`ModelBackend`, refusing attempts past the limit without checking them."""

    def authenticate(
        self, request: HttpRequest | None, username: str | None = None, password: str | None = None, **kwargs: Any
    ) -> AbstractBaseUser | None:
        account = _digest((username or "").casefold())
        address = client_address(request)
        keys = throttle_keys(account, address)
        known_good = None if address is None else _known_good_key(account, address)
        wait = seconds_to_wait(keys, known_good)
        if wait:
            if request is not None:
                setattr(request, WAIT_ATTRIBUTE, wait)
            # PermissionDenied (not None) stops Django from asking any other backend.
            raise PermissionDenied(f"too many failed sign-ins; try again in {wait:.0f} s")
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is None and password is not None:
            limiter = _limiter()
            for limit, key in keys.values():
                limiter.hit(limit, key)
        elif user is not None and known_good is not None:
            django_cache.set(known_good, 1, KNOWN_GOOD_DAYS * 86_400)
        return user
