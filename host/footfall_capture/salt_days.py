"""Which day's salt hashes an event: the salt policies and their days, with no store attached.

Shared by the Redis salt store (:mod:`footfall_capture.salts`, the Kafka transport and the
server) and the salts a host fetches from its collector (:mod:`footfall_capture.site_salts`,
the HTTP transport), so that a host holding no Redis client imports no Redis library.
"""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

SALT_POLICIES = ("daily", "daily_site_tz")
LATE_WINDOW = dt.timedelta(days=7)  # how long after its day a salt is kept by default (the late-event window)
ONE_DAY = dt.timedelta(days=1)  # made once: stores ask for the next day on every event

_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()
_DAY_MS = 86_400_000


class SaltUnavailable(RuntimeError):
    """The salt of a day is neither held in memory nor reachable where it is kept."""


def salt_days_around(now: dt.datetime) -> list[dt.date]:
    """Every day whose salt an event of ``now`` may need under either policy, and the day after
    each (which a store fetches along with a day): the dates of ``now`` from UTC-12 to UTC+14."""
    first, last = (now - dt.timedelta(hours=12)).date(), (now + dt.timedelta(hours=14)).date()
    return [first + n * ONE_DAY for n in range((last - first).days + 2)]


def salt_day(ts_ms: int, policy: str, tz: str) -> dt.date:
    """The calendar day whose salt hashes an event at ``ts_ms`` under ``policy``."""
    if policy == "daily_site_tz":
        return dt.datetime.fromtimestamp(ts_ms / 1000, dt.UTC).astimezone(ZoneInfo(tz)).date()
    # Unix time has no leap seconds: a UTC day is a whole multiple of 86,400,000 ms.
    return dt.date.fromordinal(_EPOCH_ORDINAL + ts_ms // _DAY_MS)
