"""What the collector has seen of each site, for its installation check: the first and the last
event taken (when, from which source, on which page host) and the last refusals with their reasons.

The collector records as it answers; the dashboard's site page and ``manage.py check_site`` read.
Writes are best effort and spaced out (a site's last event at most every ``SEEN_EVERY_S`` per
source and process, a refusal at most once a second per site and reason), so a busy site or a
flood of refused beacons costs Redis almost nothing, and a Redis outage never fails a beacon.
Nothing here holds an address: a refusal keeps its reason, its detail and the page host.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis

from collector.sites import page_host

log = logging.getLogger(__name__)

# Where an event came from: the tracker's beacon (POST /collect), the pixel, the batch API, and
# a host site's middleware (footfall_capture's batches, which name their sender). The middleware's
# Kafka transport (the operator's own sites) writes to the log itself and is not seen here.
TRACKER, PIXEL, BATCH_API, MIDDLEWARE = "tracker", "pixel", "batch API", "middleware"
SEEN_EVERY_S = 5.0
REFUSED_EVERY_S = 1.0
KEEP_REFUSED = 20
KEEP_FOR_S = 90 * 86_400  # a site silent for 90 days starts over: "no event yet"
_MOST_SPACED = 10_000  # (site, what) pairs whose last write is remembered, per process


@dataclass(frozen=True)
class Sighting:
    at_ms: int
    source: str
    host: str | None


@dataclass(frozen=True)
class Refusal:
    at_ms: int
    source: str
    reason: str
    detail: str
    host: str | None


@dataclass(frozen=True)
class SiteSightings:
    """A site's first and last events (None: no event yet) and its last refusals, newest first."""

    first: Sighting | None
    last: Sighting | None
    refused: list[Refusal]


class Unreadable(RuntimeError):
    """The record cannot be read now (its Redis does not answer)."""


def _key(site_id: str) -> str:
    return f"ff:install:{site_id}"


class Sightings:
    """The record in Redis, written by the collector and read for the installation check."""

    def __init__(self, client: redis.Redis, clock: Callable[[], float] = time.time) -> None:
        self.client, self.clock = client, clock
        self._written: dict[tuple[str, str], float] = {}  # (site, what) -> when last written

    @classmethod
    def at(cls, redis_url: str, timeout_s: float) -> Sightings:
        """The record in the Redis at ``redis_url``, whose calls give up after ``timeout_s``."""
        return cls(redis.Redis.from_url(redis_url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s))

    def _due(self, site_id: str, what: str, every_s: float, now: float) -> bool:
        last = self._written.get((site_id, what))
        if last is not None and now - last < every_s:
            return False
        if len(self._written) >= _MOST_SPACED:
            self._written.clear()
        self._written[(site_id, what)] = now
        return True

    def seen(self, site_id: str, source: str, url: str | None) -> None:
        """An event of ``site_id`` was taken from ``source`` for the page ``url``."""
        now = self.clock()
        if not self._due(site_id, source, SEEN_EVERY_S, now):
            return  # most beacons end here: not even the page's host is worked out
        value = json.dumps({"at_ms": int(now * 1000), "source": source, "host": page_host(url)})
        try:
            with self.client.pipeline(transaction=False) as pipe:
                pipe.hsetnx(_key(site_id), "first", value).hset(_key(site_id), "last", value)
                pipe.expire(_key(site_id), KEEP_FOR_S).execute()
        except redis.RedisError as exc:
            log.debug("the installation check's record was not written: %s", exc)

    def refused(self, site_id: str, source: str, reason: str, detail: str, url: str | None) -> None:
        """An event naming ``site_id`` for the page ``url`` was refused (or dropped: a bot, Do Not
        Track) for ``reason``."""
        now = self.clock()
        if not self._due(site_id, f"refused:{reason}", REFUSED_EVERY_S, now):
            return
        value = json.dumps({"at_ms": int(now * 1000), "source": source, "reason": reason,
                            "detail": detail[:300], "host": page_host(url)})  # fmt: skip
        key = f"{_key(site_id)}:refused"
        try:
            with self.client.pipeline(transaction=False) as pipe:
                pipe.lpush(key, value).ltrim(key, 0, KEEP_REFUSED - 1).expire(key, KEEP_FOR_S).execute()
        except redis.RedisError as exc:
            log.debug("the installation check's record was not written: %s", exc)

    def read(self, site_id: str) -> SiteSightings:
        """What was recorded of ``site_id``; raises :class:`Unreadable` if Redis cannot say."""
        try:
            with self.client.pipeline(transaction=False) as pipe:
                pipe.hmget(_key(site_id), "first", "last").lrange(f"{_key(site_id)}:refused", 0, KEEP_REFUSED - 1)
                (first, last), refused = pipe.execute()
        except redis.RedisError as exc:
            raise Unreadable(f"the collector's record cannot be read right now ({type(exc).__name__})") from exc
        return SiteSightings(_sighting(first), _sighting(last), [Refusal(**_fields(raw)) for raw in refused])


def _fields(raw: bytes | str) -> dict[str, Any]:
    return json.loads(raw)


def _sighting(raw: bytes | str | None) -> Sighting | None:
    return None if raw is None else Sighting(**_fields(raw))
