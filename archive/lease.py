"""A Redis lock that lasts only as long as its holder: a lease renewed while the work runs.

The batch jobs (rollups, archive compaction) must not run at once, and a backfill may take
hours. A lock with a fixed multi-hour expiry would stay taken for those hours after a
``kill -9`` of its worker, so the redelivered task (``acks_late``) would wait them out.
Here the lock expires after ``ttl_s`` unless a daemon thread of the holder renews it every
``ttl_s / 3``: a dead holder releases it within ``ttl_s``, a live one keeps it for as long as
it needs. redis-py's :class:`redis.lock.Lock` does the atomic parts (set-if-absent with a
token, renew and release only by that token, in Lua).
"""

from __future__ import annotations

import logging
import threading
from types import TracebackType

import redis
from redis.exceptions import LockError

log = logging.getLogger(__name__)


class Lease:
    """``with Lease(client, key) as held:`` — ``held`` is False when someone else holds the key.

    The lease is given up on leaving the block. If a renewal fails (Redis unreachable for
    longer than the lease, or the key taken over after it expired), it is logged: the holder
    may then be running alongside another, which the jobs guarded here tolerate (they are
    idempotent) but should not do for long."""

    def __init__(self, client: redis.Redis, key: str, ttl_s: float = 120.0) -> None:
        if ttl_s < 3:
            raise ValueError("ttl_s must be at least 3 seconds")
        # thread_local=False: the renewing thread must see the token the acquiring thread set.
        self._lock = client.lock(key, timeout=ttl_s, thread_local=False)
        self._every = ttl_s / 3
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None
        self.key = key

    def acquire(self, token: str | None = None) -> bool:
        """Take the lease without waiting; False when someone else holds it. ``token`` (unique
        per holder, e.g. with a UUID in it) becomes the key's value, which others may read."""
        if not self._lock.acquire(blocking=False, token=token):
            return False
        self._stop.clear()
        self._renewer = threading.Thread(target=self._renew, name=f"lease:{self.key}", daemon=True)
        self._renewer.start()
        return True

    @property
    def held(self) -> bool:
        """True between a successful :meth:`acquire` and :meth:`release`."""
        return self._renewer is not None

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()

    def release(self) -> None:
        """Give the lease up now (idempotent)."""
        if self._renewer is None:
            return
        self._stop.set()
        self._renewer.join()
        self._renewer = None
        try:
            self._lock.release()
        except LockError:
            log.warning("lease %s had expired or been taken over before it was released", self.key)
        except redis.RedisError:
            log.warning("could not release lease %s; it expires on its own", self.key, exc_info=True)

    def _renew(self) -> None:
        while not self._stop.wait(self._every):
            try:
                self._lock.reacquire()
            except LockError:
                log.error("lease %s was lost (expired or taken over): another job may run alongside", self.key)
                return
            except redis.RedisError:
                log.warning("could not renew lease %s; trying again", self.key, exc_info=True)
