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

A host site whose Redis user may only read the salt keys (docs/security.md, ``manage.py
redis_host_user``) cannot create a salt: its store falls back to reading them the first time
Redis refuses it, and the server creates each day's ahead (:func:`salt_days_around`, the
``make-salts-ahead`` task), so every day's salt exists before any site needs it.
"""

from __future__ import annotations

import datetime as dt
import functools
import secrets
import threading
import time
from collections.abc import Callable

import redis

from footfall_capture.quiet_log import quiet_logger
from footfall_capture.salt_days import LATE_WINDOW, ONE_DAY, SaltUnavailable

log = quiet_logger(__name__)

GRACE = dt.timedelta(minutes=10)
UTC_NOW = functools.partial(dt.datetime.now, dt.UTC)  # the default clock: the time now, in UTC
RETRY_S = 5.0  # after Redis failed, how long salts not held are reported unavailable without asking it
KEY = "ff:salt:{day}"


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
        self.read_only = False  # set once Redis refused to create a salt: this user may only read them

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
            fetched = self._fetch((day, day + ONE_DAY), now)
        except redis.RedisError as exc:
            self._failed(exc)
            raise SaltUnavailable(f"no salt held for {day} and Redis is unreachable ({exc})") from exc
        if day not in fetched:  # only when reading: nobody made it yet
            self._retry_at = time.monotonic() + RETRY_S
            log.warning("no salt for %s in Redis yet: the server makes each day's ahead (make-salts-ahead)", day)
            raise SaltUnavailable(f"no salt for {day} in Redis yet, and this Redis user may not create one")
        return fetched[day]

    def make(self, days: list[dt.date]) -> None:
        """Create the salts of ``days`` that do not exist yet (and extend their expiry to this
        store's window), as :meth:`salt` would; raise ``redis.RedisError`` if Redis refuses."""
        self._fetch(tuple(days), self.clock())

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
        """Get-or-create the salts of ``days`` (only get, once Redis refused to create), hold
        them, and return those that exist."""
        deadlines = {day: expires_at(day, now, self.late_window) for day in days}
        if not self.read_only:
            try:
                replies = self._get_or_create(deadlines)
            except redis.exceptions.NoPermissionError as exc:
                self.read_only = True
                log.warning("this Redis user may only read salts (%s); the server makes them ahead", exc)
        if self.read_only:
            replies = self._get(deadlines)
        fetched: dict[dt.date, bytes] = {}
        with self._lock:
            held = {d: v for d, v in self._held.items() if v[1] > now}
            for index, (day, deadline) in enumerate(deadlines.items()):
                value, expire_ts = replies[2 * index], replies[2 * index + 1]
                if value is None:
                    if self.read_only:
                        continue
                    raise redis.RedisError(f"salt {KEY.format(day=day.isoformat())} vanished right after it was set")
                # EXPIRETIME is -1 for a key without expiry: then the store's own deadline holds.
                expires = deadline if expire_ts < 0 else dt.datetime.fromtimestamp(expire_ts, dt.UTC)
                held[day] = (value, min(deadline, expires))
                fetched[day] = value
            self._held = held
        self._retry_at = 0.0
        return fetched

    def _get_or_create(self, deadlines: dict[dt.date, dt.datetime]) -> list:
        """In one transaction: create each missing salt, extend its expiry to ours; its value and expiry."""
        pipe = self.client.pipeline(transaction=True)
        for day, deadline in deadlines.items():
            key = KEY.format(day=day.isoformat())
            pipe.set(key, secrets.token_bytes(32), nx=True, exat=int(deadline.timestamp()))
            pipe.expireat(key, int(deadline.timestamp()), gt=True)
            pipe.get(key)
            pipe.expiretime(key)
        replies = pipe.execute()
        return [reply for index, reply in enumerate(replies) if index % 4 >= 2]

    def _get(self, deadlines: dict[dt.date, dt.datetime]) -> list:
        """Each salt's value and expiry, creating none (what a read-only Redis user may do)."""
        pipe = self.client.pipeline(transaction=False)  # MULTI is a command such a user lacks
        for day in deadlines:
            key = KEY.format(day=day.isoformat())
            pipe.get(key)
            pipe.expiretime(key)
        return pipe.execute()
