"""Pre-aggregate a batch of events into counter increments: pure, no I/O.

:func:`aggregate` turns decoded events into a :class:`Batch`: the dedup fingerprints of its
events and the summed operations (hash increments, capped sorted-set increments with their
visitors, HyperLogLog members, last-seen times) that :class:`realtime.store.CounterStore`
applies in one atomic Redis step. Summing in memory first means a batch of thousands of
events costs a few hundred Redis operations, in one round trip.

The events of a batch are grouped per site and minute, and each dimension is then counted
column by column with C-backed containers (``Counter``, ``set(zip(...))``): a worker's hot
loop touches each event a few times, not once per dimension value.

Same events in, same batch out (order aside): the tests run it twice and compare.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from footfall.goals import prop_text
from footfall.revenue import amount_units, currency_of
from footfall.vocabulary import (
    ENGAGED_MS_PROP,
    ENGAGEMENT,
    ENGAGEMENT_DIMENSIONS,
    EVENT_COUNT_DIMENSIONS,
    EVENT_DIMENSIONS,
    MAX_ENGAGED_MS,
    NON_CUSTOM_TYPES,
    PROP_SEPARATOR,
    REF_DIRECT,
    REF_UNKNOWN,
    REFPAGE_SEPARATOR,
)
from footfall_capture.events import Event
from realtime.keys import VISITOR_CHARS, KeyLayout, fingerprint
from realtime.value_counts import count_values, sum_values


class ValueOp(NamedTuple):
    """Page views (custom events, for :data:`~footfall.vocabulary.EVENT_COUNT_DIMENSIONS`) and visitors of
    one value of a dimension in one bucket; the store counts them under the value, or under
    ``(other)`` when the bucket's set is full (see :mod:`realtime.keys`, Caps)."""

    top_key: str
    cap: int
    visitors_prefix: str  # + the value (or "(other)") names the value's HyperLogLog ("": none kept)
    expire_at: int
    pageviews: int  # the increment of the value's score: page views, or events
    value: str
    visitors: str  # distinct visitor members (realtime.keys.visitor_member), concatenated
    # The minute's hour: its ``merged`` marker and the prefix of its value sketches ("": none);
    # while the marker exists, visitors go to the hour sketch too (realtime.keys, Value hours).
    hour_marker: str = ""
    hour_prefix: str = ""
    hour_expire_at: int = 0


class AmountOp(NamedTuple):
    """Engagement reports and their engaged milliseconds of one value in one bucket: the
    reports' sorted set decides whether the value holds a place or counts as ``(other)``
    (Caps), and the milliseconds' set takes them under the same value (Engagement)."""

    count_key: str
    amount_key: str
    cap: int
    count: int
    amount: int
    value: str


@dataclass
class Batch:
    """Everything one batch changes in the store."""

    marks: dict[str, list[bytes]] = field(default_factory=lambda: defaultdict(list))  # site -> fingerprints
    hincr: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    pfadd: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    values: list[ValueOp] = field(default_factory=list)
    amounts: list[AmountOp] = field(default_factory=list)
    seen_at: dict[tuple[str, str], int] = field(default_factory=dict)  # (key, visitor) -> max ts
    expire_at: dict[str, int] = field(default_factory=dict)  # key -> unix seconds
    events: int = 0  # events counted by this batch
    late: int = 0  # older than the realtime window: left to the batch layer
    duplicates_in_batch: int = 0

    @property
    def zincr(self) -> dict[tuple[str, str], int]:
        """Page views per (sorted-set key, value), before any cap: a view for tests and tools."""
        sums: dict[tuple[str, str], int] = defaultdict(int)
        for op in self.values:
            sums[(op.top_key, op.value)] += op.pageviews
        return sums

    @property
    def engaged(self) -> dict[tuple[str, str], tuple[int, int]]:
        """(reports, engaged ms) per (reports' sorted-set key, value), before any cap: a view for tests."""
        sums: dict[tuple[str, str], tuple[int, int]] = {}
        for op in self.amounts:
            count, amount = sums.get((op.count_key, op.value), (0, 0))
            sums[(op.count_key, op.value)] = (count + op.count, amount + op.amount)
        return sums

    @property
    def value_visitors(self) -> dict[str, set[str]]:
        """Visitors per value HyperLogLog key, before any cap: a view for tests and tools."""
        members: dict[str, set[str]] = defaultdict(set)
        for op in self.values:
            if op.visitors_prefix:
                joined, width = op.visitors, VISITOR_CHARS
                members[op.visitors_prefix + op.value].update(
                    joined[k : k + width] for k in range(0, len(joined), width)
                )
        return members


def _refs(views: list[Event]) -> list[str]:
    # footfall.vocabulary.ref_label inlined: this runs once per page view (same answers: the unit
    # tests compare dimension_values, built from these columns, with the batch layer's labels)
    return [e.ref_domain or (REF_UNKNOWN if (r := e.referrer) and r.strip() else REF_DIRECT) for e in views]


# Column builders, one per dimension: page views of a site-minute -> each one's value (or None).
_COLUMNS: dict[str, Callable[[list[Event], list[str]], list[str | None]]] = {
    "page": lambda views, refs: [e.path for e in views],
    "ref": lambda views, refs: refs,
    "refurl": lambda views, refs: [e.referrer for e in views],
    "refpage": lambda views, refs: [
        f"{ref}{REFPAGE_SEPARATOR}{e.path}" if e.path else None for e, ref in zip(views, refs, strict=True)
    ],
    "ref_type": lambda views, refs: [e.ref_type for e in views],
    "utm_source": lambda views, refs: [u.source if (u := e.utm) else None for e in views],
    "utm_medium": lambda views, refs: [u.medium if (u := e.utm) else None for e in views],
    "utm_campaign": lambda views, refs: [u.campaign if (u := e.utm) else None for e in views],
    "browser": lambda views, refs: [u.browser if (u := e.ua) else None for e in views],
    "os": lambda views, refs: [u.os if (u := e.ua) else None for e in views],
    "device": lambda views, refs: [u.device if (u := e.ua) else None for e in views],
    "country": lambda views, refs: [e.country for e in views],
}
assert set(_COLUMNS) == set(EVENT_DIMENSIONS), "a dimension without a column builder"
assert ENGAGEMENT_DIMENSIONS == ("page", "ref"), "_add_engagement builds its columns in this order"


def engaged_ms(event: Event) -> int:
    """The engaged milliseconds an engagement report adds: its ``engaged_ms`` property within
    ``0 .. MAX_ENGAGED_MS`` (an implausible report is capped, not dropped); 0 when the property
    is missing or not a number (the report still counts as one)."""
    value = event.props.get(ENGAGED_MS_PROP) if event.props else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return min(max(int(value), 0), MAX_ENGAGED_MS)


def event_props(event: Event) -> list[str]:
    """The ``event_prop`` values of a custom event, one per property (realtime.keys, Custom events)."""
    if not event.props:
        return []
    name = event.type
    return [
        f"{name}{PROP_SEPARATOR}{key}{PROP_SEPARATOR}{prop_text(value)}"
        for key, value in event.props.items()
        if PROP_SEPARATOR not in key
    ]


def dimension_values(event: Event) -> dict[str, str]:
    """The breakdown values of a page view (absent ones are left out, never guessed): the
    column builders' answers for one event, so tests and tools see what the worker counts."""
    views, refs = [event], _refs([event])
    values = {dim: column(views, refs)[0] for dim, column in _COLUMNS.items()}
    return {dim: value for dim, value in values.items() if value}


def aggregate(
    events: Sequence[Event],
    layout: KeyLayout,
    now_ms: int,
    skip: Collection[bytes] = (),
    marks: Sequence[bytes] | None = None,
) -> Batch:
    """Sum ``events`` into one :class:`Batch`; events older than the window count as late;
    events whose fingerprints are in ``skip`` (known to be counted already) are left out.
    ``marks``: the events' fingerprints, when the caller has them already."""
    batch = Batch()
    oldest = now_ms - layout.retention_s * 1000
    fresh: dict[tuple[str, bytes], Event] = {}
    for event, mark in zip(events, marks if marks is not None else map(_mark, events), strict=True):
        if event.ts < oldest:
            batch.late += 1
            continue
        key = (event.site_id, mark)
        if key in fresh:
            batch.duplicates_in_batch += 1
        elif key[1] not in skip:
            fresh[key] = event
    minutes: dict[tuple[str, int], list[Event]] = defaultdict(list)
    for (site, fp), event in fresh.items():
        batch.marks[site].append(fp)
        minutes[(site, event.ts // 60_000)].append(event)
    batch.events = len(fresh)
    views: list[Event] = []
    others: list[Event] = []  # the humans' events that are not page views
    for (site, minute), group in minutes.items():
        views += _add_minute(batch, layout, site, minute, group, others)
    _add_values(batch, layout, views)
    if others:
        customs = [e for e in others if e.type not in NON_CUSTOM_TYPES]
        _add_custom(batch, layout, customs)
        _add_revenue(batch, layout, [e for e in customs if e.props])
        _add_engagement(batch, layout, [e for e in others if e.type == ENGAGEMENT])
    return batch


def _mark(event: Event) -> bytes:
    return fingerprint(event.event_id)


def _add_minute(
    batch: Batch, layout: KeyLayout, site: str, minute: int, group: list[Event], others: list[Event]
) -> list[Event]:
    """Add one site-minute's counters and visitors to its minute and hour keys; return its
    page views (their dimensions are counted per hour, see :func:`_add_values`) and add its
    humans' other events to ``others``."""
    hour = minute // 60
    expires, hour_expires = layout.expires_at(minute), layout.hour_expires_at(hour)
    humans = [e for e in group if not ((ua := e.ua) is not None and ua.is_bot)]
    types: Counter[str] = Counter(e.type for e in humans)
    # A field per built-in type only: custom event names are counted, capped, as the
    # ``event`` dimension (realtime.keys, Custom events), and must not grow this hash.
    counts: Counter[str] = Counter({f"event:{t}": n for t, n in types.items() if t in NON_CUSTOM_TYPES})
    counts["events"] = len(group)
    if len(humans) < len(group):
        counts["bot_events"] = len(group) - len(humans)  # counted apart, as the batch layer does
    views = [e for e in humans if e.type == "pageview"] if types.get("pageview") else []
    if views:
        counts["pageviews"] = len(views)
    if len(views) < len(humans):
        rest = [e for e in humans if e.type != "pageview"]
        others += rest
        if custom := sum(n for t, n in types.items() if t not in NON_CUSTOM_TYPES):
            counts["custom_events"] = custom
        if reports := [e for e in rest if e.type == ENGAGEMENT]:
            counts["engagements"] = len(reports)
            counts["engaged_ms"] = sum(map(engaged_ms, reports))
    for counters, when in ((layout.counters(site, minute), expires), (layout.hour_counters(site, hour), hour_expires)):
        batch.expire_at[counters] = when
        for name, incr in counts.items():
            batch.hincr[(counters, name)] += incr
    # An engagement report (sent as a tab is hidden) makes no visitor on its own: only what a
    # visitor did (page views, custom events) counts them, as the batch layer does.
    actors = [e for e in humans if e.type != ENGAGEMENT] if types.get(ENGAGEMENT) else humans
    members = [v[:VISITOR_CHARS] if (v := e.visitor_id) else None for e in actors]  # realtime.keys.visitor_member
    visitors = set(members)
    visitors.discard(None)
    if visitors:
        for uv, when in ((layout.visitors(site, minute), expires), (layout.hour_visitors(site, hour), hour_expires)):
            batch.pfadd[uv] |= visitors
            batch.expire_at[uv] = when
        active, seen_at = layout.active(site), batch.seen_at
        batch.expire_at[active] = max(expires, batch.expire_at.get(active, 0))
        for e, member in zip(actors, members, strict=True):
            if member and e.ts > seen_at.get((active, member), 0):
                seen_at[(active, member)] = e.ts
    return views


def _add_values(batch: Batch, layout: KeyLayout, views: list[Event]) -> None:
    """Count the dimension values of the batch's page views per minute (with visitors) and
    per hour (see :mod:`realtime.value_counts`), in the order that gives the busiest values
    of each bucket the places of its capped set (realtime.keys, Caps)."""
    if not views:
        return
    refs = _refs(views)
    per_minute, per_hour = count_values(
        [e.site_id for e in views],
        [e.ts // 60_000 for e in views],
        [v[:VISITOR_CHARS] if (v := e.visitor_id) else None for e in views],
        [column(views, refs) for column in _COLUMNS.values()],
    )
    _add_counts(batch, layout, list(_COLUMNS), per_minute, per_hour)


def _add_custom(batch: Batch, layout: KeyLayout, customs: list[Event]) -> None:
    """Count custom events per name and per property value (realtime.keys, Custom events), as
    :func:`_add_values` counts page views. One row per property of an event (one row when it
    has none), its name on the first row only, so that one pass counts both dimensions."""
    if not customs:
        return
    sites: list[str] = []
    minutes: list[int] = []
    members: list[str | None] = []
    names: list[str | None] = []
    props: list[str | None] = []
    for e in customs:
        values: list[str | None] = [*event_props(e)] or [None]
        sites += [e.site_id] * len(values)
        minutes += [e.ts // 60_000] * len(values)
        members += [e.visitor_id[:VISITOR_CHARS] if e.visitor_id else None] * len(values)
        names += [e.type, *[None] * (len(values) - 1)]
        props += values
    per_minute, per_hour = count_values(sites, minutes, members, [names, props])
    _add_counts(batch, layout, list(EVENT_COUNT_DIMENSIONS), per_minute, per_hour)


def revenue_values(event: Event) -> list[tuple[str, int]]:
    """The revenue values of a custom event with the units of each (realtime.keys, Revenue)."""
    props = event.props or {}
    amounts = [
        (k, units) for k, v in props.items() if PROP_SEPARATOR not in k and (units := amount_units(v)) is not None
    ]
    if not amounts:
        return []
    codes = [(k, code) for k, v in props.items() if PROP_SEPARATOR not in k and (code := currency_of(v))]
    out = []
    for prop, units in amounts:
        head = f"{event.type}{PROP_SEPARATOR}{prop}{PROP_SEPARATOR}"
        out.append((head, units))
        out += [(f"{head}{named}{PROP_SEPARATOR}{code}", units) for named, code in codes]
    return out


def _add_revenue(batch: Batch, layout: KeyLayout, customs: list[Event]) -> None:
    """Sum the amounts of custom events per revenue value, per minute and per hour, as
    :func:`_add_engagement` sums engaged time."""
    sites: list[str] = []
    minutes: list[int] = []
    units: list[int] = []
    values: list[str | None] = []
    for e in customs:
        for value, amount in revenue_values(e):
            sites.append(e.site_id)
            minutes.append(e.ts // 60_000)
            units.append(amount)
            values.append(value)
    if not sites:
        return
    _add_amounts(
        batch, layout, sum_values(sites, minutes, units, [values]),
        lambda site, minute, _: (layout.revenues(site, minute), layout.revenue_units(site, minute)),
        lambda site, hour, _: (layout.hour_revenues(site, hour), layout.hour_revenue_units(site, hour)),
    )  # fmt: skip


def _add_engagement(batch: Batch, layout: KeyLayout, reports: list[Event]) -> None:
    """Sum engagement reports and their engaged time per page and referrer label, per minute
    and per hour (realtime.keys, Engagement), busiest values first as for page views."""
    if not reports:
        return
    sums = sum_values(
        [e.site_id for e in reports],
        [e.ts // 60_000 for e in reports],
        [engaged_ms(e) for e in reports],
        [[e.path for e in reports], _refs(reports)],
    )
    dims = ENGAGEMENT_DIMENSIONS
    _add_amounts(
        batch, layout, sums,
        lambda site, m, d: (layout.engagements(site, m, dims[d]), layout.engaged_ms(site, m, dims[d])),
        lambda site, h, d: (layout.hour_engagements(site, h, dims[d]), layout.hour_engaged_ms(site, h, dims[d])),
    )  # fmt: skip


def _add_amounts(
    batch: Batch,
    layout: KeyLayout,
    sums: tuple[list[tuple[str, int, int, str, int, int]], list[tuple[str, int, int, str, int, int]]],
    minute_keys: Callable[[str, int, int], tuple[str, str]],
    hour_keys: Callable[[str, int, int], tuple[str, str]],
) -> None:
    """The amount operations of :func:`realtime.value_counts.sum_values`' per-minute and per-hour rows:
    ``minute_keys`` / ``hour_keys`` (site, bucket, dimension index) name a value's pair of sorted sets
    (counts, amounts), capped at the layout's values per minute or hour."""
    per_minute, per_hour = sums
    for rows, cap, keys_of, expires in (
        (per_minute, layout.minute_values, minute_keys, layout.expires_at),
        (per_hour, layout.hour_values, hour_keys, layout.hour_expires_at),
    ):
        for site, bucket, dim, value, count, amount in rows:
            keys = keys_of(site, bucket, dim)
            batch.expire_at[keys[0]] = batch.expire_at[keys[1]] = expires(bucket)
            batch.amounts.append(AmountOp(*keys, cap, count, amount, value))


def _add_counts(
    batch: Batch,
    layout: KeyLayout,
    dims: list[str],
    per_minute: list[tuple[str, int, int, str, int, str]],
    per_hour: list[tuple[str, int, int, str, int, str]],
) -> None:
    """The value operations of :func:`realtime.value_counts.count_values`' rows over ``dims``."""
    keys: dict[tuple[str, int, int], tuple[str, str, int]] = {}
    hours: dict[tuple[str, int, int], tuple[str, str, int]] = {}
    for site, minute, dim, value, pageviews, visitors in per_minute:
        if (named := keys.get((site, minute, dim))) is None:
            name, hour = dims[dim], minute // 60
            named = keys[(site, minute, dim)] = (
                layout.top(site, minute, name), layout.dim_visitors(site, minute, name, ""), layout.expires_at(minute)
            )  # fmt: skip
            hours[(site, minute, dim)] = (
                layout.hour_merged(site, hour), layout.hour_dim_visitors(site, hour, name, ""),
                layout.hour_expires_at(hour),
            )  # fmt: skip
            batch.expire_at[named[0]] = named[2]
        batch.values.append(
            ValueOp(named[0], layout.minute_values, named[1], named[2], pageviews, value, visitors,
                    *hours[(site, minute, dim)])
        )  # fmt: skip
    # The hours' sorted sets only: a value's visitors over hours are merged from its
    # minutes' HyperLogLogs when read (realtime.keys), which halves what a page view adds.
    for site, hour, dim, value, pageviews, _ in per_hour:
        if (named := keys.get((site, -1 - hour, dim))) is None:
            when = layout.hour_expires_at(hour)
            named = keys[(site, -1 - hour, dim)] = (layout.hour_top(site, hour, dims[dim]), "", when)
            batch.expire_at[named[0]] = when
        batch.values.append(ValueOp(named[0], layout.hour_values, "", named[2], pageviews, value, ""))
