"""The site's own salts, fetched from its collector with the ingest key and held in memory only.

The HTTP transport computes visitor ids on the host (so no raw IP leaves the host's memory
for a disk anywhere) with the salts of ``GET /api/v1/sites/<site>/salts``: yesterday's,
today's and tomorrow's under the site's salt policy and time zone, each derived from the
server's day salt for this site alone, so a host's salts make no other site's ids. They are
fetched when an event needs a day not held, and again every :data:`REFRESH_S` (which brings
the next day's before midnight); a failed fetch is retried no sooner than :data:`RETRY_S`
later, and the salts held keep serving meanwhile. Only the days of the last answer are kept:
a salt the server has let go of is forgotten here too.
"""

from __future__ import annotations

import datetime as dt
import http.client
import json
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable

from footfall_capture.http_sink import Collector, collector_answer
from footfall_capture.quiet_log import quiet_logger
from footfall_capture.salt_days import SALT_POLICIES, SaltUnavailable, salt_day

log = quiet_logger(__name__)

REFRESH_S = 3600.0
RETRY_S = 30.0
TIMEOUT_S = 5.0
_HEX_SALT = re.compile(r"^[0-9a-f]{64}$")


class SaltGone(ValueError):
    """The event's day is older than every salt the collector still gives: its id cannot be made."""


class SiteSalts:
    """``salt(ts_ms)``: the site's salt of the day of ``ts_ms``, from memory or the collector;
    raises :class:`SaltUnavailable` while it cannot be had, :class:`SaltGone` for a day let go."""

    def __init__(self, collector: Collector, clock: Callable[[], float] = time.monotonic) -> None:
        self.collector = collector
        self.clock = clock
        self.policy, self.timezone = "daily", "UTC"
        self._held: dict[dt.date, bytes] = {}
        self._fetched_at: float | None = None
        self._retry_at = 0.0
        self._lock = threading.Lock()  # one fetch at a time

    def salt(self, ts_ms: int) -> bytes:
        day = salt_day(ts_ms, self.policy, self.timezone)
        salt = self._held.get(day)
        if salt is None or self._fetched_at is None or self.clock() - self._fetched_at >= REFRESH_S:
            self._refresh()
            day = salt_day(ts_ms, self.policy, self.timezone)  # the first answer names the policy
            salt = self._held.get(day)
        if salt is not None:
            return salt
        if self._held and day < min(self._held):
            raise SaltGone(f"the salt of {day} is no longer given by the collector")
        raise SaltUnavailable(f"no salt of {day} held, and the collector did not give it")

    def _refresh(self) -> None:
        with self._lock:
            if self.clock() < self._retry_at:
                return
            try:
                answer = self._fetch()
            except (OSError, http.client.HTTPException, ValueError) as exc:
                self._retry_at = self.clock() + RETRY_S
                log.warning("the site's salts could not be fetched from the collector (%s); "
                            "events wait in memory meanwhile", _reason(exc))  # fmt: skip
                return
            self.policy, self.timezone, self._held = answer
            self._fetched_at, self._retry_at = self.clock(), 0.0

    def _fetch(self) -> tuple[str, str, dict[dt.date, bytes]]:
        request = self.collector.request(self.collector.site_url("salts"))
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:  # noqa: S310 - checked URL
            body = json.loads(response.read())
        policy, timezone = body.get("policy"), body.get("timezone")
        if policy not in SALT_POLICIES or not isinstance(timezone, str):
            raise ValueError(f"unexpected salt policy {policy!r} or time zone {timezone!r}")
        salts = {}
        for item in body.get("salts", []):
            if not _HEX_SALT.fullmatch(str(item.get("salt"))):
                raise ValueError("a salt that is not 32 bytes in hex")
            salts[dt.date.fromisoformat(item["day"])] = bytes.fromhex(item["salt"])
        if not salts:
            raise ValueError("no salts in the answer")
        return policy, timezone, salts


def _reason(exc: Exception) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return collector_answer(exc)
    return str(exc)
