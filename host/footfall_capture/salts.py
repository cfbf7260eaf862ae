"""Daily-rotating secret salts for cookieless visitor ids, kept in Redis and deleted after their day.

The visitor id is ``hash(salt of the day, site, IP, user agent)``: stable within a day, so
a day's unique visitors can be counted, and unlinkable across days once the salt is gone
(invariant 5). Salts are shared by every process that makes events (the server's collector
and each host site's middleware) through Redis: ``SET NX``, so the first process to need a
day's salt creates it. Each process holds the salts it uses in memory, and fetches the next
day's salt along with a day's, so a Redis outage does not stop it from making events.

Lifetime: a day's salt is deleted ``late_window`` (the late-event and import window, 7 days
by default, the server's ``FOOTFALL_INGEST_MAX_AGE_HOURS``) after the day has ended
everywhere on Earth, or after its last fetch for a day that had already ended (an import
of an old day), whichever is later. Until then every piece of a day, live or imported in
parts, hashes with the same salt. A process that fetches a salt extends its expiry to its
own window (``EXPIREAT … GT``), so the longest window among the processes sharing Redis wins.

Policies: ``daily`` rotates at midnight UTC; ``daily_site_tz`` rotates at midnight in the
site's time zone, so "unique visitors today" follows the site's own day.
"""

from __future__ import annotations

import datetime as dt
import functools
import secrets
import threading
import time
from collections.abc import Callable
from zoneinfo import ZoneInfo

import redis

from footfall_capture.quiet_log import quiet_logger

log = quiet_logger(__name__)

SALT_POLICIES = ("daily", "daily_site_tz")
GRACE = dt.timedelta(minutes=10)
LATE_WINDOW = dt.timedelta(days=7)
UTC_NOW = functools.partial(dt.datetime.now, dt.UTC)  # the default clock: the time now, in UTC
ONE_DAY = dt.timedelta(days=1)  # made once: salt() asks for the next day on every event
RETRY_S = 5.0  # after Redis failed, how long salts not held are reported unavailable without asking it
KEY = "ff:salt:{day}"


_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()
_DAY_MS = 86_400_000


class SaltUnavailable(RuntimeError):
    """The salt of a day is neither held in memory nor reachable in Redis."""


def salt_day(ts_ms: int, policy: str, tz: str) -> dt.date:
    """The calendar day whose salt hashes an event at ``ts_ms`` under ``policy``."""
    if policy == "daily_site_tz":
        return dt.datetime.fromtimestamp(ts_ms / 1000, dt.UTC).astimezone(ZoneInfo(tz)).date()
    # Unix time has no leap seconds: a UTC day is a whole multiple of 86,400,000 ms.
    return dt.date.fromordinal(_EPOCH_ORDINAL + ts_ms // _DAY_MS)


def expires_at(day: dt.date, now: dt.datetime, late_window: dt.timedelta = LATE_WINDOW) -> dt.datetime:
    """When the salt of ``day`` must be gone: ``late_window`` plus a grace period after the
    day has ended everywhere on Earth (UTC-12), or after ``now`` if that is later."""
    end_everywhere = dt.datetime.combine(day + ONE_DAY, dt.time(12), dt.UTC)
    return max(end_everywhere, now) + late_window + GRACE


class SaltStore:
    """Get-or-create the salt of a day, shared through Redis, held per process.

    :meth:`salt` answers from memory while the held salt is valid; otherwise it asks Redis,
    for the day and the day after at once. While the next day's salt is not held, a salt
    asked from memory also tries to fetch it, so a process that runs across midnight has the
    new day's salt before it needs it. After Redis failed, it is not asked again for
    :data:`RETRY_S` seconds, so callers retrying during an outage do not wait on it each time.
    """

    def __init__(
        self,
        client: redis.Redis,
        late_window: dt.timedelta = LATE_WINDOW,
        clock: Callable[[], dt.datetime] = UTC_NOW,
    ) -> None:
        self.client = client
        self.late_window = late_window
        self.clock = clock
        self._held: dict[dt.date, tuple[bytes, dt.datetime]] = {}
        self._lock = threading.Lock()
        self._retry_at = 0.0  # monotonic time before which Redis is not asked again after a failure

    def salt(self, day: dt.date) -> bytes:
        """The salt of ``day``; raise :class:`SaltUnavailable` if it is neither held nor reachable."""
        now = self.clock()
        held = self._held.get(day)
        if held is not None and now < held[1]:
            if day + ONE_DAY not in self._held:
                self._prefetch(day + ONE_DAY, now)
            return held[0]
        if time.monotonic() < self._retry_at:
            raise SaltUnavailable(f"no salt held for {day} and Redis was unreachable moments ago")
        try:
            return self._fetch((day, day + ONE_DAY), now)[day]
        except redis.RedisError as exc:
            self._failed(exc)
            raise SaltUnavailable(f"no salt held for {day} and Redis is unreachable ({exc})") from exc

    def _prefetch(self, day: dt.date, now: dt.datetime) -> None:
        if time.monotonic() < self._retry_at:
            return
        try:
            self._fetch((day,), now)
        except redis.RedisError as exc:
            self._failed(exc)

    def _failed(self, exc: redis.RedisError) -> None:
        if self._retry_at == 0.0:  # the first failure since the last success
            log.warning("Redis unreachable for salts (%s); using the salts held in memory", exc)
        self._retry_at = time.monotonic() + RETRY_S

    def _fetch(self, days: tuple[dt.date, ...], now: dt.datetime) -> dict[dt.date, bytes]:
        pipe = self.client.pipeline(transaction=True)
        deadlines = {day: expires_at(day, now, self.late_window) for day in days}
        for day, deadline in deadlines.items():
            key = KEY.format(day=day.isoformat())
            pipe.set(key, secrets.token_bytes(32), nx=True, exat=int(deadline.timestamp()))
            pipe.expireat(key, int(deadline.timestamp()), gt=True)
            pipe.get(key)
            pipe.expiretime(key)
        replies = pipe.execute()
        fetched: dict[dt.date, bytes] = {}
        with self._lock:
            held = {d: v for d, v in self._held.items() if v[1] > now}
            for index, (day, deadline) in enumerate(deadlines.items()):
                value, expire_ts = replies[4 * index + 2], replies[4 * index + 3]
                if value is None:
                    raise redis.RedisError(f"salt {KEY.format(day=day.isoformat())} vanished right after it was set")
                held[day] = (value, min(deadline, dt.datetime.fromtimestamp(max(expire_ts, 0), dt.UTC)))
                fetched[day] = value
            self._held = held
        self._retry_at = 0.0
        return fetched
