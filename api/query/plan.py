"""Where each part of a query's time range is answered from: pure, no I/O.

The lambda merge. The batch layer (Mongo rollups) is exact but only has *settled* days —
site-local days named in ``batch_runs`` — at day and hour resolution. The speed layer (Redis)
has minute resolution but only for its retention window. A range is therefore cut into:

* ``batch`` pieces: whole settled site-local days (or whole hours of them);
* ``realtime`` pieces: everything else inside the Redis retention window;
* ``missing`` pieces: older than the window and never rolled up — reported, never guessed.

The pieces are disjoint and cover the range exactly, so stitching them neither leaves gaps
nor counts anything twice. Times are timezone-aware datetimes; ranges are half-open.

Arithmetic and comparisons are done in UTC: Python compares and subtracts two datetimes of
the *same* zone by wall clock, which is wrong across a DST change.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Literal
from zoneinfo import ZoneInfo

Source = Literal["batch", "realtime", "missing"]
INTERVALS = ("minute", "hour", "day")


@dataclass(frozen=True, slots=True)
class Piece:
    """A half-open part ``[start, end)`` of a range and the layer that answers it.

    For ``batch`` pieces ``day`` is the site-local day and ``hour`` the site-local hour
    (``None`` for a whole day)."""

    start: dt.datetime
    end: dt.datetime
    source: Source
    day: str | None = None
    hour: int | None = None


def ms(moment: dt.datetime) -> int:
    return int(moment.timestamp() * 1000)


def local_midnight(day: dt.date, tz: ZoneInfo) -> dt.datetime:
    """The first instant of ``day`` in ``tz`` (DST-safe: midnight may not exist, 00:00 folds)."""
    return dt.datetime.combine(day, dt.time(), tz).astimezone(dt.UTC).astimezone(tz)


def floor(moment: dt.datetime, interval: str, tz: ZoneInfo) -> dt.datetime:
    """The start of the ``interval`` bucket holding ``moment``, in ``tz``."""
    local = moment.astimezone(tz)
    if interval == "day":
        return local_midnight(local.date(), tz)
    if interval == "hour":
        return local.replace(minute=0, second=0, microsecond=0)
    return local.replace(second=0, microsecond=0)


def step(moment: dt.datetime, interval: str, tz: ZoneInfo) -> dt.datetime:
    """The start of the bucket after the one starting at ``moment``."""
    if interval == "day":
        return local_midnight(moment.astimezone(tz).date() + dt.timedelta(days=1), tz)
    delta = dt.timedelta(hours=1) if interval == "hour" else dt.timedelta(minutes=1)
    # Absolute time arithmetic: a local hour that repeats at a DST change is two buckets.
    return (moment.astimezone(dt.UTC) + delta).astimezone(tz)


def buckets(start: dt.datetime, end: dt.datetime, interval: str, tz: ZoneInfo) -> list[tuple[dt.datetime, dt.datetime]]:
    """``[start, end)`` cut into whole ``interval`` buckets in ``tz`` (``start`` floored, ``end``
    rounded up to a bucket boundary)."""
    out = []
    cursor = floor(start, interval, tz)
    end = _utc(end)
    while _utc(cursor) < end:
        nxt = step(cursor, interval, tz)
        out.append((cursor, nxt))
        cursor = nxt
    return out


def _utc(moment: dt.datetime) -> dt.datetime:
    return moment.astimezone(dt.UTC)


def site_day(moment: dt.datetime, site_tz: ZoneInfo) -> dt.date:
    return moment.astimezone(site_tz).date()


def classify_bucket(
    start: dt.datetime, end: dt.datetime, site_tz: ZoneInfo, settled: AbstractSet[str], realtime_from: dt.datetime
) -> Piece:
    """The source of one time-series bucket.

    A bucket comes from the batch layer when it is exactly a settled site-local day, or
    exactly one hour (an hour document) of a settled day; otherwise from Redis if it lies
    inside the retention window, else it is missing."""
    day = site_day(start, site_tz)
    if day.isoformat() in settled:
        day_start = _utc(local_midnight(day, site_tz))
        if _utc(start) == day_start and _utc(end) == _utc(local_midnight(day + dt.timedelta(days=1), site_tz)):
            return Piece(start, end, "batch", day.isoformat())
        local = start.astimezone(site_tz)
        # The repeated hour of a DST fall-back (fold=1) shares its hour document with the
        # first: the first gets it, the second is left to Redis or reported missing.
        hour_long = _utc(end) - _utc(start) == dt.timedelta(hours=1)
        if hour_long and local.minute == 0 and local.second == 0 and not local.fold:
            return Piece(start, end, "batch", day.isoformat(), local.hour)
    if _utc(start) >= _utc(realtime_from):
        return Piece(start, end, "realtime")
    return Piece(start, end, "missing")


def split(
    start: dt.datetime,
    end: dt.datetime,
    site_tz: ZoneInfo,
    settled: AbstractSet[str],
    realtime_from: dt.datetime,
    merge: bool = False,
) -> list[Piece]:
    """``[start, end)`` as disjoint, ordered pieces, none crossing a site-local midnight:
    whole settled days from the batch layer, the rest from Redis where retained, else
    missing. With ``merge``, adjacent realtime or missing pieces are joined across days."""
    start, end, realtime_from = _utc(start), _utc(end), _utc(realtime_from)
    if end <= start:
        return []
    pieces: list[Piece] = []
    cursor = start
    while cursor < end:
        day = site_day(cursor, site_tz)
        day_start = _utc(local_midnight(day, site_tz))
        day_end = _utc(local_midnight(day + dt.timedelta(days=1), site_tz))
        part_end = min(day_end, end)
        if day.isoformat() in settled and cursor == day_start and part_end == day_end:
            pieces.append(Piece(cursor, part_end, "batch", day.isoformat()))
        else:
            if cursor < realtime_from:
                gap_end = min(part_end, realtime_from)
                pieces.append(Piece(cursor, gap_end, "missing"))
                if gap_end < part_end:
                    pieces.append(Piece(gap_end, part_end, "realtime"))
            else:
                pieces.append(Piece(cursor, part_end, "realtime"))
        cursor = part_end
    return _merge(pieces) if merge else pieces


def _merge(pieces: Iterable[Piece]) -> list[Piece]:
    out: list[Piece] = []
    for piece in pieces:
        if out and piece.source != "batch" and out[-1].source == piece.source and out[-1].end == piece.start:
            out[-1] = Piece(out[-1].start, piece.end, piece.source)
        else:
            out.append(piece)
    return out


def realtime_window_start(now: dt.datetime, retention_s: int) -> dt.datetime:
    """The first whole minute whose Redis counters are certainly still kept."""
    oldest = now - dt.timedelta(seconds=retention_s) + dt.timedelta(minutes=1)
    return oldest.replace(second=0, microsecond=0)
