"""The hourly buckets of a site-local day: instants, not wall-clock labels. Pure (zoneinfo only).

A local day runs from its first instant (local midnight, or the instant the clock jumps past
it) to the next day's. Its *boundaries* are the instants at which the local wall clock reads
``HH:00`` plus the zone's transitions (offset changes) inside the day; its *buckets* are the
spans between consecutive boundaries, each named by its UTC start. So:

* an ordinary day has 24 one-hour buckets;
* a day whose clock falls back one hour (Europe/Berlin, 2026-10-25) has 25: the repeated
  ``02:00`` is two buckets, ``02:00+02:00`` and ``02:00+01:00``;
* a day whose clock springs forward one hour (2026-03-29) has 23: ``02:00`` does not exist;
* Australia/Lord_Howe's 30-minute changes: falling back (02:00 → 01:30) gives 25 buckets,
  one of them the 30-minute ``01:30+10:30``; springing forward (02:00 → 02:30) gives 24,
  one of them the 30-minute ``02:30+11:00``;
* a half-hour zone (Asia/Kolkata) has 24 buckets starting at ``HH:30`` UTC;
* a zone whose standard offset changes (America/Caracas, 2016-05-01, -04:30 → -04:00 at
  02:30) gets a bucket that ends at the transition (``02:00-04:30`` lasts 30 minutes).

Everything is computed in UTC: Python compares datetimes of one zone by wall clock, which
is wrong across a change. The rollup (Spark, ``spark_jobs.transforms.localize``) computes the
same buckets per event; the query layer (``query.plan``) and the load step use these.
"""

from __future__ import annotations

import datetime as dt
import itertools
from dataclasses import dataclass
from functools import lru_cache
from zoneinfo import ZoneInfo

HOUR = dt.timedelta(hours=1)
_SCAN = dt.timedelta(hours=1)  # real zones never change their offset twice within an hour


@dataclass(frozen=True, slots=True)
class Bucket:
    """One bucket ``[start, end)`` of a local day: UTC instants and the local offset in it."""

    start: dt.datetime  # UTC
    end: dt.datetime  # UTC
    offset: dt.timedelta  # the zone's UTC offset throughout the bucket

    @property
    def start_ms(self) -> int:
        return ms(self.start)

    @property
    def end_ms(self) -> int:
        return ms(self.end)

    def local_start(self, tz: ZoneInfo) -> dt.datetime:
        """The start on the site's wall clock, with its offset (fold set on a repeated hour)."""
        return self.start.astimezone(tz)


def ms(moment: dt.datetime) -> int:
    return int(moment.timestamp() * 1000)


def bucket_key(start: dt.datetime) -> str:
    """The id part naming a bucket by its UTC start, e.g. ``2026-10-25T01:00Z``."""
    return start.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%MZ")


def local_midnight(day: dt.date, tz: ZoneInfo) -> dt.datetime:
    """The first instant of ``day`` in ``tz`` (DST-safe: midnight may not exist, 00:00 folds)."""
    return dt.datetime.combine(day, dt.time(), tz).astimezone(dt.UTC).astimezone(tz)


def _offset(moment: dt.datetime, tz: ZoneInfo) -> dt.timedelta:
    return moment.astimezone(tz).utcoffset() or dt.timedelta(0)


def transitions(tz: ZoneInfo, start: dt.datetime, end: dt.datetime) -> list[dt.datetime]:
    """The instants in ``(start, end]`` (UTC) at which ``tz``'s offset changes, to the second."""
    start, end = start.astimezone(dt.UTC), end.astimezone(dt.UTC)
    found = []
    cursor, before = start, _offset(start, tz)
    while cursor < end:
        nxt = min(cursor + _SCAN, end)
        after = _offset(nxt, tz)
        if after != before:
            low, high = cursor, nxt  # offset(low) == before, offset(high) != before
            while high - low > dt.timedelta(seconds=1):
                mid = low + (high - low) / 2
                mid = mid.replace(microsecond=0)
                if _offset(mid, tz) == before:
                    low = mid
                else:
                    high = mid
            found.append(high)
        cursor, before = nxt, after
    return found


@lru_cache(maxsize=4096)
def day_buckets(day: dt.date, tz: ZoneInfo) -> tuple[Bucket, ...]:
    """The buckets of the local ``day`` in ``tz``, in order (see the module docstring)."""
    first = local_midnight(day, tz).astimezone(dt.UTC)
    last = local_midnight(day + dt.timedelta(days=1), tz).astimezone(dt.UTC)
    cuts = {first, last}
    edges = [first, *[t for t in transitions(tz, first, last) if t < last], last]
    for seg_start, seg_end in itertools.pairwise(edges):
        cuts.add(seg_start)
        offset = _offset(seg_start, tz)
        # In a segment of constant offset the wall clock reads HH:00 every hour from here on.
        wall = seg_start + offset
        to_next = (-(wall - dt.datetime(1970, 1, 1, tzinfo=dt.UTC))) % HOUR
        cut = seg_start + to_next
        while cut < seg_end:
            cuts.add(cut)
            cut += HOUR
    ordered = sorted(cuts)
    return tuple(Bucket(s, e, _offset(s, tz)) for s, e in itertools.pairwise(ordered))


def bucket_at(day: dt.date, tz: ZoneInfo, start_ms: int) -> Bucket | None:
    """The bucket of ``day`` starting at ``start_ms``, or None."""
    for bucket in day_buckets(day, tz):
        if bucket.start_ms == start_ms:
            return bucket
    return None


def span_transitions(zones: set[str] | frozenset[str], first: dt.date, last: dt.date) -> list[tuple[str, int]]:
    """(zone, transition ms) of every zone's transitions between the local days ``first`` and
    ``last`` (a day of slack each side covers every zone's day boundaries)."""
    start = dt.datetime.combine(first - dt.timedelta(days=2), dt.time(), dt.UTC)
    end = dt.datetime.combine(last + dt.timedelta(days=2), dt.time(), dt.UTC)
    return [(name, ms(t)) for name in sorted(zones) for t in transitions(ZoneInfo(name), start, end)]
