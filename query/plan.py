"""Where each part of a query's time range is answered from: pure, no I/O.

The lambda merge. The batch layer (Mongo rollups) is exact but only has *settled* days —
site-local days named in ``batch_runs`` — at day and hour resolution. The speed layer (Redis)
has minute resolution but only for its retention window. A range is therefore cut into:

* ``batch`` pieces: whole settled site-local days (or whole hours of them);
* ``imported`` pieces: whole days of history imported from another product
  (:mod:`historical.imported`), on days the site has not settled, or on every imported day
  when the site prefers its imports where the two overlap;
* ``realtime`` pieces: everything else inside the Redis retention window;
* ``missing`` pieces: older than the window and never rolled up — reported, never guessed.

The pieces are disjoint and cover the range exactly, so stitching them neither leaves gaps
nor counts anything twice. Times are timezone-aware datetimes; ranges are half-open.

Arithmetic and comparisons are done in UTC: Python compares and subtracts two datetimes of
the *same* zone by wall clock, which is wrong across a DST change.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Literal
from zoneinfo import ZoneInfo

from historical.buckets import day_buckets, local_midnight
from historical.buckets import ms as ms  # re-exported: the query layer's instants are ms

Source = Literal["batch", "imported", "realtime", "missing"]


@dataclass(frozen=True, slots=True)
class Days:
    """The whole days a range may take from the day stores: ``settled`` (the batch layer's),
    ``imported`` (another product's history) and which of the two wins a day both hold."""

    settled: AbstractSet[str]
    imported: Collection[str] = frozenset()  # a mapping of day to import id will do
    imported_wins: bool = False

    def source(self, day: str) -> Source | None:
        """The store that answers the whole site-local ``day``, if any."""
        if day in self.imported and (self.imported_wins or day not in self.settled):
            return "imported"
        return "batch" if day in self.settled else None


@dataclass(frozen=True, slots=True)
class Piece:
    """A half-open part ``[start, end)`` of a range and the layer that answers it.

    For ``batch`` and ``imported`` pieces ``day`` is the site-local day and ``bucket`` the UTC
    start (ms) of a part of it (an hourly bucket of :mod:`historical.buckets`, or a smaller
    bucket of an imported day, which has no value); ``None`` for a whole day."""

    start: dt.datetime
    end: dt.datetime
    source: Source
    day: str | None = None
    bucket: int | None = None


def floor(moment: dt.datetime, interval: str, tz: ZoneInfo) -> dt.datetime:
    """The start of the ``interval`` bucket holding ``moment``, in ``tz``."""
    local = moment.astimezone(tz)
    if interval == "day":
        return local_midnight(local.date(), tz)
    if interval == "hour":
        utc = _utc(moment)
        return next(b.start for b in day_buckets(local.date(), tz) if b.start <= utc < b.end).astimezone(tz)
    return local.replace(second=0, microsecond=0)


def step(moment: dt.datetime, interval: str, tz: ZoneInfo) -> dt.datetime:
    """The start of the bucket after the one starting at ``moment``."""
    if interval == "day":
        return local_midnight(moment.astimezone(tz).date() + dt.timedelta(days=1), tz)
    if interval == "hour":
        utc = _utc(moment)
        return next(b.end for b in day_buckets(site_day(moment, tz), tz) if b.start <= utc < b.end).astimezone(tz)
    # Absolute time arithmetic: a minute's length never depends on the wall clock.
    return (_utc(moment) + dt.timedelta(minutes=1)).astimezone(tz)


def buckets(start: dt.datetime, end: dt.datetime, interval: str, tz: ZoneInfo) -> list[tuple[dt.datetime, dt.datetime]]:
    """``[start, end)`` cut into whole ``interval`` buckets in ``tz`` (``start`` floored, ``end``
    rounded up to a bucket boundary), each bound in ``tz`` (so its ISO form has its offset).

    Hours are the buckets of :func:`historical.buckets.day_buckets`: a local day whose clock
    falls back has 25, one that springs forward 23, and a 30-minute change gives a 30-minute
    bucket."""
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
    start: dt.datetime, end: dt.datetime, site_tz: ZoneInfo, days: Days, realtime_from: dt.datetime
) -> Piece:
    """The source of one time-series bucket.

    A bucket comes from the batch layer when it is exactly a settled site-local day, or
    exactly one hourly bucket (an hour document) of a settled day, the repeated hour of a
    clock change included; from an import when its day is answered from one (only the whole
    day has a value there); otherwise from Redis if it lies inside the retention window, else
    it is missing. Every bucket has one source, so no bucket is counted twice."""
    day = site_day(start, site_tz)
    source = days.source(day.isoformat())
    whole = _utc(start) == _utc(local_midnight(day, site_tz)) and _utc(end) == _utc(
        local_midnight(day + dt.timedelta(days=1), site_tz)
    )
    if source == "imported":
        return Piece(start, end, "imported", day.isoformat(), None if whole else ms(start))
    if source == "batch":
        if whole:
            return Piece(start, end, "batch", day.isoformat())
        for bucket in day_buckets(day, site_tz):
            if bucket.start == _utc(start) and bucket.end == _utc(end):
                return Piece(start, end, "batch", day.isoformat(), bucket.start_ms)
    if _utc(start) >= _utc(realtime_from):
        return Piece(start, end, "realtime")
    return Piece(start, end, "missing")


def split(
    start: dt.datetime,
    end: dt.datetime,
    site_tz: ZoneInfo,
    days: Days,
    realtime_from: dt.datetime,
    merge: bool = False,
) -> list[Piece]:
    """``[start, end)`` as disjoint, ordered pieces, none crossing a site-local midnight:
    whole settled or imported days from their store (:meth:`Days.source`), the rest from
    Redis where retained, else missing. With ``merge``, adjacent realtime or missing pieces
    are joined across days."""
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
        source = days.source(day.isoformat())
        if source is not None and cursor == day_start and part_end == day_end:
            pieces.append(Piece(cursor, part_end, source, day.isoformat()))
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
        joins = piece.source in ("realtime", "missing") and out and out[-1].source == piece.source
        if joins and out[-1].end == piece.start:
            out[-1] = Piece(out[-1].start, piece.end, piece.source)
        else:
            out.append(piece)
    return out


def realtime_window_start(now: dt.datetime, retention_s: int) -> dt.datetime:
    """The first whole minute whose Redis counters are certainly still kept."""
    oldest = now - dt.timedelta(seconds=retention_s) + dt.timedelta(minutes=1)
    return oldest.replace(second=0, microsecond=0)
