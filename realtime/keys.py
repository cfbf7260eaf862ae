"""Redis key layout of the realtime counters (the speed layer). Pure: names and times only.

Buckets are event-time minutes, ``m = ts_ms // 60000`` (minutes since the epoch, UTC).
Every key of a bucket expires ``retention`` after the bucket ends (default 48 h,
``FOOTFALL_REALTIME_RETENTION_HOURS``); older events are left to the batch layer.

=======================================  ==========  =================================================
key                                      type        content
=======================================  ==========  =================================================
``ff:rt:{site}:{m}:c``                   hash        ``events``, ``pageviews``, ``bot_events``,
                                                     ``event:<type>`` counts
``ff:rt:{site}:{m}:uv``                  HyperLog    visitor ids of non-bot events (mergeable to
                                                     hours and days with PFCOUNT over many keys)
``ff:rt:{site}:{m}:top:{dim}``           zset        page views per value of ``dim`` (top-N by
                                                     ZREVRANGE; ranges by ZUNION)
``ff:rt:{site}:{m}:uv:{dim}:{value}``    HyperLog    visitors per value of ``dim``
``ff:rt:{site}:h{h}:c``, ``:uv``,        as above    UTC hour ``h = ts_ms // 3600000``: the sums
``:top:{dim}``, ``:uv:{dim}:{value}``                (hashes, sorted sets) and unions (HyperLogLogs)
                                                     of its minutes' keys, expiring with its last
                                                     minute
``ff:rt:hours_from``                     string      first hour ``h`` from which every hour key is
                                                     complete (see below)
``ff:rt:{site}:active``                  zset        visitor id -> last event time (ms); concurrent
                                                     visitors = members seen in the last 5 minutes
``ff:rt:seen:{site}:{event_id}``         string      dedup mark: the event is counted (TTL =
                                                     retention; written atomically with its counts)
``ff:rt:offsets:{group}``                hash        ``{topic}:{partition}`` -> next offset, written
                                                     with the counts it covers
``ff:rt:stats``                          hash        running totals: events, duplicates, invalid, late
``ff:rt:workers``                        hash        worker id -> JSON heartbeat (rate, lag, time)
=======================================  ==========  =================================================

Hour keys are written by the same atomic step as the minutes they sum, so that a time
series by hour, a day's totals or a day's top pages read 24 keys, not 1,440. Counters
written by a version without hour keys have none: the first batch applied by this version
sets ``hours_from`` to the next hour when the store already holds counts (``ff:rt:stats``
exists), else to 0; readers use hour keys only from that hour on, and minutes before it.
A reset of the rebuild clears and replays whole hours. When upgrading, stop the older
workers before starting these: an older worker still counting after the marker is set would
leave hours without its share.

Dimensions (:data:`footfall.vocabulary.EVENT_DIMENSIONS`): ``page`` (path), ``ref`` (referrer label: the domain or app
package id, ``(unknown)`` for a referrer naming neither, ``(direct)`` when none), ``refurl``
(full referrer), ``refpage`` (``ref`` + U+001F + path: which referrers drive traffic to which
pages), ``ref_type``, ``utm_source``, ``utm_medium``, ``utm_campaign``, ``browser``, ``os``,
``device``, ``country``.

Values inside keys come from validated events only (never from query input): the query
layer checks dimension names against that list and never builds key patterns.
"""

from __future__ import annotations

from dataclasses import dataclass

ACTIVE_WINDOW_MS = 5 * 60 * 1000
HOUR_MS = 3_600_000
PREFIX = "ff:rt"


def bucket_of(key: str) -> tuple[str, int] | None:
    """``("minute", m)`` or ``("hour", h)`` for a bucket key of :class:`KeyLayout`, else None.

    Site ids hold no ``:`` (see :data:`footfall_capture.events.SITE_ID`), so the bucket is the fourth
    part of the name."""
    parts = key.split(":", 4)
    if len(parts) < 5 or f"{parts[0]}:{parts[1]}" != PREFIX:
        return None
    bucket = parts[3]
    if bucket.isdigit():
        return ("minute", int(bucket))
    if bucket[:1] == "h" and bucket[1:].isdigit():
        return ("hour", int(bucket[1:]))
    return None


@dataclass(frozen=True, slots=True)
class KeyLayout:
    """Key names and expiry times for a given retention (seconds)."""

    retention_s: int = 48 * 3600

    def counters(self, site: str, minute: int) -> str:
        return f"{PREFIX}:{site}:{minute}:c"

    def visitors(self, site: str, minute: int) -> str:
        return f"{PREFIX}:{site}:{minute}:uv"

    def top(self, site: str, minute: int, dim: str) -> str:
        return f"{PREFIX}:{site}:{minute}:top:{dim}"

    def dim_visitors(self, site: str, minute: int, dim: str, value: str) -> str:
        return f"{PREFIX}:{site}:{minute}:uv:{dim}:{value}"

    def hour_counters(self, site: str, hour: int) -> str:
        return f"{PREFIX}:{site}:h{hour}:c"

    def hour_visitors(self, site: str, hour: int) -> str:
        return f"{PREFIX}:{site}:h{hour}:uv"

    def hour_top(self, site: str, hour: int, dim: str) -> str:
        return f"{PREFIX}:{site}:h{hour}:top:{dim}"

    def hour_dim_visitors(self, site: str, hour: int, dim: str, value: str) -> str:
        return f"{PREFIX}:{site}:h{hour}:uv:{dim}:{value}"

    def active(self, site: str) -> str:
        return f"{PREFIX}:{site}:active"

    def dedup(self, site: str, event_id: str) -> str:
        return f"{PREFIX}:seen:{site}:{event_id}"

    def offsets(self, group: str) -> str:
        return f"{PREFIX}:offsets:{group}"

    def site_pattern(self, site: str) -> str:
        """SCAN pattern of every bucket key of a site, and of its ``active`` set."""
        return f"{PREFIX}:{site}:*"

    stats = f"{PREFIX}:stats"
    hours_from = f"{PREFIX}:hours_from"
    workers = f"{PREFIX}:workers"

    def expires_at(self, minute: int) -> int:
        """Unix seconds at which a bucket's keys expire."""
        return (minute + 1) * 60 + self.retention_s

    def hour_expires_at(self, hour: int) -> int:
        """Unix seconds at which an hour's keys expire: with the hour's last minute."""
        return self.expires_at(hour * 60 + 59)
