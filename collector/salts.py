"""Daily-rotating secret salts for cookieless visitor ids, kept in Redis and deleted after their day.

The visitor id is ``hash(salt of the day, site, IP, user agent)``: stable within a day, so
a day's unique visitors can be counted, and unlinkable across days once the salt is gone
(invariant 5). Salts are shared by every collector process through Redis (``SET NX`` so the
first process to need a day's salt creates it) and expire at the end of their day plus a
grace period for requests in flight. Each process caches the salts it has used.

Policies: ``daily`` rotates at midnight UTC; ``daily_site_tz`` rotates at midnight in the
site's time zone, so "unique visitors today" follows the site's own day. A salt for a day
that has already passed (a backfilled event) lives one hour, enough for the import that
needs it, and is then deleted like any other.
"""

from __future__ import annotations

import datetime as dt
import secrets
import threading
from zoneinfo import ZoneInfo

import redis

SALT_POLICIES = ("daily", "daily_site_tz")
GRACE = dt.timedelta(minutes=10)
PAST_DAY_TTL = dt.timedelta(hours=1)
KEY = "ff:salt:{day}"


_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()
_DAY_MS = 86_400_000


def salt_day(ts_ms: int, policy: str, tz: str) -> dt.date:
    """The calendar day whose salt hashes an event at ``ts_ms`` under ``policy``."""
    if policy == "daily_site_tz":
        return dt.datetime.fromtimestamp(ts_ms / 1000, dt.UTC).astimezone(ZoneInfo(tz)).date()
    # UTC days are whole multiples of 86,400,000 ms since the epoch (Unix time has no leap
    # seconds): integer arithmetic, a third of the datetime round trip's cost on every event.
    return dt.date.fromordinal(_EPOCH_ORDINAL + ts_ms // _DAY_MS)


def expires_at(day: dt.date, now: dt.datetime) -> dt.datetime:
    """When the salt of ``day`` must be gone: after the day ends everywhere on Earth (UTC-12),
    plus a grace period, or one hour from now for a day already past."""
    end_everywhere = dt.datetime.combine(day + dt.timedelta(days=1), dt.time(12), dt.UTC)
    return max(end_everywhere + GRACE, now + PAST_DAY_TTL)


class SaltStore:
    """Get-or-create the salt of a day, shared through Redis, cached per process."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self._cache: dict[dt.date, tuple[bytes, dt.datetime]] = {}
        self._lock = threading.Lock()

    def salt(self, day: dt.date, now: dt.datetime | None = None) -> bytes:
        now = now or dt.datetime.now(dt.UTC)
        cached = self._cache.get(day)
        if cached is not None and now < cached[1]:
            return cached[0]
        key = KEY.format(day=day.isoformat())
        deadline = expires_at(day, now)
        pipe = self.client.pipeline(transaction=True)
        pipe.set(key, secrets.token_bytes(32), nx=True, exat=int(deadline.timestamp()))
        pipe.get(key)
        pipe.expiretime(key)
        _, value, expire_ts = pipe.execute()
        if value is None:
            raise redis.RedisError(f"salt {key} vanished right after it was set")
        valid_until = min(deadline, dt.datetime.fromtimestamp(max(expire_ts, 0), dt.UTC))
        with self._lock:
            self._cache = {d: v for d, v in self._cache.items() if v[1] > now}
            self._cache[day] = (value, valid_until)
        return value
