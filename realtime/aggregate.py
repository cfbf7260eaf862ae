"""Pre-aggregate a batch of events into counter increments: pure, no I/O.

:func:`aggregate` turns decoded events into a :class:`Batch`: the dedup keys of its events
and the summed operations (sorted-set increments, hash increments, HyperLogLog members,
last-seen times) that :class:`realtime.store.CounterStore` applies in one atomic Redis
step. Summing in memory first means a batch of thousands of events costs a few hundred
Redis operations, in one round trip.

Same events in, same batch out (order aside): the tests run it twice and compare.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from footfall.vocabulary import EVENT_DIMENSIONS, ref_label, refpage
from footfall_capture.events import Event
from realtime.keys import KeyLayout


@dataclass
class Batch:
    """Everything one batch changes in the store."""

    dedup_keys: dict[str, Event] = field(default_factory=dict)  # key -> event, first seen wins
    zincr: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    hincr: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    pfadd: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    seen_at: dict[tuple[str, str], int] = field(default_factory=dict)  # (key, visitor) -> max ts
    expire_at: dict[str, int] = field(default_factory=dict)  # key -> unix seconds
    late: int = 0  # older than the realtime window: left to the batch layer
    duplicates_in_batch: int = 0

    @property
    def events(self) -> int:
        return len(self.dedup_keys)


_DIMENSIONS = frozenset(EVENT_DIMENSIONS)


def dimension_values(event: Event) -> dict[str, str]:
    """The breakdown values of a page view (absent ones are left out, never guessed)."""
    ref = ref_label(event.ref_domain, event.referrer)  # as the batch rollup labels it
    utm, ua = event.utm, event.ua
    values = {
        "page": event.path,
        "ref": ref,
        "refurl": event.referrer,
        "refpage": refpage(ref, event.path),
        "ref_type": event.ref_type,
        "utm_source": utm.source if utm else None,
        "utm_medium": utm.medium if utm else None,
        "utm_campaign": utm.campaign if utm else None,
        "browser": ua.browser if ua else None,
        "os": ua.os if ua else None,
        "device": ua.device if ua else None,
        "country": event.country,
    }
    return {dim: value for dim, value in values.items() if value and dim in _DIMENSIONS}


@dataclass
class _Minute:
    """What the events of one site and minute add up to; keys are built once per bucket in :func:`_emit`."""

    hincr: dict[str, int] = field(default_factory=lambda: defaultdict(int))  # counter field -> increment
    visitors: set[str] = field(default_factory=set)
    top: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))  # (dim, value) -> page views
    dim_visitors: dict[tuple[str, str], set[str]] = field(default_factory=lambda: defaultdict(set))


def aggregate(events: Iterable[Event], layout: KeyLayout, now_ms: int) -> Batch:
    """Sum ``events`` into one :class:`Batch`; events older than the window count as late.

    Events are first summed per site and minute with plain tuples as keys; Redis key names
    are formatted once per bucket and value, not once per event (the hot loop of a worker)."""
    batch = Batch()
    oldest = now_ms - layout.retention_s * 1000
    dedup_keys, seen_at = batch.dedup_keys, batch.seen_at
    minutes: dict[tuple[str, int], _Minute] = {}
    active_expires: dict[str, int] = {}  # site -> latest expiry of the minutes its visitors were seen in
    for event in events:
        if event.ts < oldest:
            batch.late += 1
            continue
        dedup = layout.dedup(event.site_id, event.event_id)
        if dedup in dedup_keys:
            batch.duplicates_in_batch += 1
            continue
        dedup_keys[dedup] = event
        site, minute = event.site_id, event.ts // 60_000
        bucket = minutes.get((site, minute))
        if bucket is None:
            bucket = minutes[(site, minute)] = _Minute()
        hincr = bucket.hincr
        hincr["events"] += 1
        if event.ua is not None and event.ua.is_bot:
            hincr["bot_events"] += 1  # counted apart, as the batch layer does
            continue
        hincr[f"event:{event.type}"] += 1
        visitor = event.visitor_id
        if visitor:
            bucket.visitors.add(visitor)
            active = (layout.active(site), visitor)
            seen_at[active] = max(event.ts, seen_at.get(active, 0))
            active_expires[site] = max(layout.expires_at(minute), active_expires.get(site, 0))
        if event.type != "pageview":
            continue
        hincr["pageviews"] += 1
        top, dim_visitors = bucket.top, bucket.dim_visitors
        for pair in dimension_values(event).items():
            top[pair] += 1
            if visitor:
                dim_visitors[pair].add(visitor)
    for (site, minute), bucket in minutes.items():
        _emit(batch, layout, site, minute, bucket)
    for site, expires in active_expires.items():
        batch.expire_at[layout.active(site)] = expires
    return batch


def _emit(batch: Batch, layout: KeyLayout, site: str, minute: int, bucket: _Minute) -> None:
    """Turn one bucket's sums into the batch's keyed operations and expiry times."""
    # Each minute's sums also go to its hour's keys (see realtime.keys), in the same batch.
    hour = minute // 60
    expires, hour_expires = layout.expires_at(minute), layout.hour_expires_at(hour)
    for counters, when in ((layout.counters(site, minute), expires), (layout.hour_counters(site, hour), hour_expires)):
        batch.expire_at[counters] = when
        for name, incr in bucket.hincr.items():
            batch.hincr[(counters, name)] += incr
    if bucket.visitors:
        for uv, when in ((layout.visitors(site, minute), expires), (layout.hour_visitors(site, hour), hour_expires)):
            batch.pfadd[uv] |= bucket.visitors
            batch.expire_at[uv] = when
    tops: dict[str, tuple[str, str]] = {}
    for (dim, value), incr in bucket.top.items():
        if (keys := tops.get(dim)) is None:
            keys = tops[dim] = (layout.top(site, minute, dim), layout.hour_top(site, hour, dim))
            batch.expire_at[keys[0]] = expires
            batch.expire_at[keys[1]] = hour_expires
        batch.zincr[(keys[0], value)] += incr
        batch.zincr[(keys[1], value)] += incr
    for (dim, value), visitors in bucket.dim_visitors.items():
        for uv, when in (
            (layout.dim_visitors(site, minute, dim, value), expires),
            (layout.hour_dim_visitors(site, hour, dim, value), hour_expires),
        ):
            batch.pfadd[uv] |= visitors
            batch.expire_at[uv] = when


def without(batch_events: Iterable[Event], skip: set[str], layout: KeyLayout, now_ms: int) -> Batch:
    """Re-aggregate leaving out the events whose dedup keys are in ``skip`` (already counted)."""
    return aggregate((e for e in batch_events if layout.dedup(e.site_id, e.event_id) not in skip), layout, now_ms)
