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

from footfall.events import Event
from realtime.keys import DIMENSIONS, KeyLayout


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


def dimension_values(event: Event) -> dict[str, str]:
    """The breakdown values of a page view (absent ones are left out, never guessed)."""
    ref = event.ref_domain or "(direct)"
    values = {
        "page": event.path,
        "ref": ref,
        "refurl": event.referrer,
        "refpage": f"{ref}\x1f{event.path}" if event.path else None,
        "ref_type": event.ref_type,
        "utm_source": event.utm.source if event.utm else None,
        "utm_medium": event.utm.medium if event.utm else None,
        "utm_campaign": event.utm.campaign if event.utm else None,
        "browser": event.ua.browser if event.ua else None,
        "os": event.ua.os if event.ua else None,
        "device": event.ua.device if event.ua else None,
        "country": event.country,
    }
    return {dim: value for dim, value in values.items() if value and dim in DIMENSIONS}


def aggregate(events: Iterable[Event], layout: KeyLayout, now_ms: int) -> Batch:
    """Sum ``events`` into one :class:`Batch`; events older than the window count as late."""
    batch = Batch()
    oldest = now_ms - layout.retention_s * 1000
    for event in events:
        if event.ts < oldest:
            batch.late += 1
            continue
        dedup = layout.dedup(event.site_id, event.event_id)
        if dedup in batch.dedup_keys:
            batch.duplicates_in_batch += 1
            continue
        batch.dedup_keys[dedup] = event
        _add(batch, event, layout)
    return batch


def _add(batch: Batch, event: Event, layout: KeyLayout) -> None:
    site, minute = event.site_id, event.ts // 60_000
    expires = layout.expires_at(minute)
    counters = layout.counters(site, minute)
    batch.expire_at[counters] = expires
    batch.hincr[(counters, "events")] += 1
    if event.ua is not None and event.ua.is_bot:
        batch.hincr[(counters, "bot_events")] += 1  # counted apart, as the batch layer does
        return
    batch.hincr[(counters, f"event:{event.type}")] += 1
    visitor = event.visitor_id
    if visitor:
        uv = layout.visitors(site, minute)
        batch.pfadd[uv].add(visitor)
        batch.expire_at[uv] = expires
        active = layout.active(site)
        batch.seen_at[(active, visitor)] = max(event.ts, batch.seen_at.get((active, visitor), 0))
        batch.expire_at[active] = expires
    if event.type != "pageview":
        return
    batch.hincr[(counters, "pageviews")] += 1
    for dim, value in dimension_values(event).items():
        top = layout.top(site, minute, dim)
        batch.zincr[(top, value)] += 1
        batch.expire_at[top] = expires
        if visitor:
            uv = layout.dim_visitors(site, minute, dim, value)
            batch.pfadd[uv].add(visitor)
            batch.expire_at[uv] = expires


def without(batch_events: Iterable[Event], skip: set[str], layout: KeyLayout, now_ms: int) -> Batch:
    """Re-aggregate leaving out the events whose dedup keys are in ``skip`` (already counted)."""
    return aggregate((e for e in batch_events if layout.dedup(e.site_id, e.event_id) not in skip), layout, now_ms)
