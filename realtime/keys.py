"""Redis key layout of the realtime counters (the speed layer). Pure: names and times only.

Buckets are event-time minutes, ``m = ts_ms // 60000`` (minutes since the epoch, UTC).
Every key of a bucket expires ``retention`` after the bucket ends (default 48 h,
``FOOTFALL_REALTIME_RETENTION_HOURS``); older events are left to the batch layer.

=======================================  ==========  =================================================
key                                      type        content
=======================================  ==========  =================================================
``ff:rt:{site}:{m}:c``                   hash        ``events``, ``pageviews``, ``bot_events``,
                                                     ``event:<type>`` of the built-in types
                                                     (:data:`~footfall.vocabulary.NON_CUSTOM_TYPES`),
                                                     ``custom_events``, ``engaged_ms``,
                                                     ``engagements`` (human events only)
``ff:rt:{site}:{m}:uv``                  HyperLog    visitors (:func:`visitor_member`) of non-bot events (mergeable to
                                                     hours and days with PFCOUNT over many keys)
``ff:rt:{site}:{m}:top:{dim}``           zset        page views per value of ``dim`` (top-N by
                                                     ZREVRANGE; ranges by ZUNION)
``ff:rt:{site}:{m}:uv:{dim}:{value}``    HyperLog    visitors per value of ``dim`` (and of
                                                     ``event``, ``event_prop``)
``ff:rt:{site}:{m}:eng:{edim}``          zset        engagement reports per value of ``edim``
                                                     (``page``, ``ref``: see Engagement)
``ff:rt:{site}:{m}:engms:{edim}``        zset        engaged milliseconds per value of ``edim``
``ff:rt:{site}:{m}:rev``                 zset        custom events with a valid amount per revenue
                                                     value (see Revenue)
``ff:rt:{site}:{m}:revu``                zset        their amounts (units of 10^-4) per revenue value
``ff:rt:{site}:h{h}:c``, ``:uv``,        as above    UTC hour ``h = ts_ms // 3600000``: the sums
``:top:{dim}``, ``:eng:{edim}``,                     (hashes, sorted sets) and unions (HyperLogLogs)
``:engms:{edim}``, ``:rev``, ``:revu``               of its minutes' keys, expiring with its last
                                                     minute
``ff:rt:{site}:h{h}:uv:{dim}:{value}``   HyperLog    a value's visitors over the hour: the PFMERGE
                                                     of its minutes' sketches, made once the hour
                                                     has closed (see Value hours); expires with the
                                                     hour's last minute
``ff:rt:{site}:h{h}:merged``             string      ``0`` while the hour's value sketches are being
                                                     merged, ``1`` once all are (Value hours)
``ff:rt:hours_from``                     string      first hour ``h`` from which every hour key is
                                                     complete (see below)
``ff:rt:{site}:active``                  zset        visitor -> last event time (ms); concurrent
                                                     visitors = members seen in the last 5 minutes
``ff:rt:seen:{site}:{g}``                set         dedup marks: the ids (16 bytes each, see
                                                     :func:`fingerprint`) of the events counted while
                                                     generation ``g = now // dedup window`` ran;
                                                     expires two windows after ``g`` began
``ff:rt:offsets:{group}``                hash        ``{topic}:{partition}`` -> next offset, written
                                                     with the counts it covers (each shard its own)
``ff:rt:stats``                          hash        running totals: events, duplicates, invalid, late
``ff:rt:workers``                        hash        worker id -> JSON heartbeat (rate, lag, time)
=======================================  ==========  =================================================

**Caps.** A minute's sorted set of a dimension takes at most ``minute_values`` values (an
hour's ``hour_values``); past that, a value the set does not hold is counted under
:data:`~footfall.vocabulary.VALUE_OTHER`, and so are its visitors. A batch offers its values
in order of its own counts, so the busiest values take the places; referrer spam or a
crawler of distinct URLs cannot grow the store without bound. The batch layer keeps every
value.

**Dedup window.** A retried beacon repeats its event id, usually within minutes. Marks are
kept per generation of ``dedup_s`` (default 2 h, ``FOOTFALL_REALTIME_DEDUP_HOURS``) and a
new event is checked against the current and the previous generation, so a repeat is
caught for at least ``dedup_s`` after its original was counted (at most twice that). A
repeat arriving later is counted again by the speed layer and removed by the next nightly
rollup; until then it shows as realtime-versus-batch drift. A generation is one set per
site, checked and written with one command each per batch (SMISMEMBER, SADD): about 60
bytes a mark in Redis 7.

**Shards.** The counters may be spread over several Redis instances
(``FOOTFALL_REALTIME_REDIS_URLS``): an event goes to the shard of its visitor (of its event
id when it has none; see :func:`shard_of`), so each visitor's marks, sketches and
last-seen times live in one shard. Readers sum counts and the visitor estimates of the
shards, whose visitors are disjoint. Each shard records the offsets its counts cover.

Hour keys are written by the same atomic step as the minutes they sum, so that a time
series by hour, a day's totals or a day's top pages read 24 keys, not 1,440. Counters
written by a version without hour keys have none: the first batch applied by this version
sets ``hours_from`` to the next hour when the store already holds counts (``ff:rt:stats``
exists), else to 0; readers use hour keys only from that hour on, and minutes before it.
A reset of the rebuild clears and replays whole hours. When upgrading, stop the older
workers before starting these: an older worker still counting after the marker is set would
leave hours without its share.

**Value hours.** A value's visitors over a range are one PFCOUNT of its sketches. Writing an
hour sketch per value with every page view would double what a page view writes, so the
hour sketches of values are merged instead, once per closed hour, by the realtime workers
(:mod:`realtime.merge`, :data:`MERGE_DELAY_MS` after the hour ends) and by a rebuild for the
hours it replayed. Each shard merges its own, in small atomic steps: first the hour's marker
``merged`` is set to ``0``; from then on, every batch that counts a visitor of the hour under
a value also adds it to the value's hour sketch in the same atomic step (so a late event is
never missed). Then the values the hour's minute sorted sets hold (``(other)`` included) are
read, and each value's hour sketch is replaced by the PFMERGE of its 60 minute sketches, a
few hundred values a step; the marker becomes ``1`` last. A reader uses a value's hour sketch
only for hours whose marker is ``1`` on every shard, its minute sketches otherwise; both give
the same registers, so the same estimate. A rebuild deletes the markers with the rest of the
hour and merges again once it has replayed. The memory is at most one more sketch per value
and hour, usually far less than the 60 minute sketches it sums.

Dimensions (:data:`footfall.vocabulary.EVENT_DIMENSIONS`): ``page`` (path), ``ref`` (referrer label: the domain or app
package id, ``(unknown)`` for a referrer naming neither, ``(direct)`` when none), ``refurl``
(full referrer), ``refpage`` (``ref`` + U+001F + path: which referrers drive traffic to which
pages), ``ref_type``, ``utm_source``, ``utm_medium``, ``utm_campaign``, ``browser``, ``os``,
``device``, ``country``.

**Custom events.** Human events whose type is not one of
:data:`~footfall.vocabulary.NON_CUSTOM_TYPES` are counted in two more dimensions,
:data:`~footfall.vocabulary.EVENT_COUNT_DIMENSIONS`, with events (not page views) as their sorted sets' scores and
the same per-minute visitor sketches and caps: ``event`` (the type, e.g. ``signup``) and
``event_prop`` (event name + U+001F + property name + U+001F + the value as
:func:`footfall.goals.prop_text` writes it; one value per property of the event, properties
whose name holds U+001F left out, as they could not be told apart when read). Event names and
property values are attacker-controlled like paths: a minute holds at most ``minute_values``
of each, the rest is ``(other)``, which no event or property read can attribute. Only the
built-in types get an ``event:<type>`` field in the counters hash, so that made-up event names
cannot grow it.

**Engagement.** Engagement reports (type :data:`~footfall.vocabulary.ENGAGEMENT`) add their
engaged milliseconds (each capped to ``0 .. MAX_ENGAGED_MS``) and one report to the counters
hash and, per value of :data:`~footfall.vocabulary.ENGAGEMENT_DIMENSIONS` (``page``: the report's path; ``ref``: its
referrer label, which is its page view's), to a pair of sorted sets: ``eng`` (reports) decides
which values hold a place (the same caps), and ``engms`` takes the milliseconds under the same
value or ``(other)``, so a value's time and reports always go together. No visitors, and no
scroll depth: a page view's depth is a running maximum, which increments cannot sum (the batch
layer has it).

**Revenue.** Goals are matched when read, so the speed layer sums amounts before it knows which
goal reads them: for each human custom event, each property holding a valid amount
(:func:`footfall.revenue.amount_units`) adds the event and its amount under the value *event
name* + U+001F + *property* + U+001F (read by goals with a fixed currency) and, for each property
of the event holding a currency code (:func:`footfall.revenue.currency_of`), under *event name* +
U+001F + *property* + U+001F + *currency property* + U+001F + *code* (read by goals naming a
currency property). The pair of sorted sets works as Engagement's (``rev`` decides which values
hold a place, ``revu`` takes the units under the same value, so both stay together under the
same caps). Scores are doubles: sums stay exact below 2^53 units (about 900 billion in a currency
per bucket). A revenue goal takes no property condition (:class:`footfall.goals.GoalSpec`), as
these sums are not kept per property value.

Values inside keys come from validated events only (never from query input): the query
layer checks dimension names against that list and never builds key patterns.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from footfall.vocabulary import HOUR_VALUES, MINUTE_VALUES

ACTIVE_WINDOW_MS = 5 * 60 * 1000
HOUR_MS = 3_600_000
# How long after an hour ends its value sketches are merged (Value hours): events of the hour
# still in flight then are few, and each costs one more PFADD.
MERGE_DELAY_MS = 5 * 60 * 1000
MERGED, MERGING = b"1", b"0"  # the states of an hour's ``merged`` marker
PREFIX = "ff:rt"
MARK_BYTES = 16  # a dedup mark: the event id's 16 bytes
VISITOR_CHARS = 16  # a visitor's member in sketches and last-seen sets: its id's first 16 hex digits


def fingerprint(event_id: str) -> bytes:
    """The dedup mark of an event: the 16 bytes of its id (a UUID), exact and fixed-width."""
    return bytes.fromhex(event_id.replace("-", ""))


def visitor_member(visitor_id: str) -> str:
    """A visitor's member in HyperLogLogs and last-seen sets: the first 64 bits of its id
    (a hash, at least 16 hex digits), fixed-width so that a step can carry a whole list in
    one argument. Two visitors share one with odds of about n²/2⁶⁵: none expected."""
    return visitor_id[:VISITOR_CHARS]


def shard_of(routing_key: str, shards: int) -> int:
    """The shard (0 .. shards-1) of a visitor id or event id: stable across processes and
    versions (CRC-32, not Python's salted ``hash``)."""
    return zlib.crc32(routing_key.encode()) % shards if shards > 1 else 0


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
    """Key names and expiry times for a given retention, dedup window (seconds) and caps."""

    retention_s: int = 48 * 3600
    dedup_s: int = 2 * 3600
    minute_values: int = MINUTE_VALUES  # values per dimension in a minute's sorted set (see Caps)
    hour_values: int = HOUR_VALUES  # ... in an hour's

    def counters(self, site: str, minute: int) -> str:
        return f"{PREFIX}:{site}:{minute}:c"

    def visitors(self, site: str, minute: int) -> str:
        return f"{PREFIX}:{site}:{minute}:uv"

    def top(self, site: str, minute: int, dim: str) -> str:
        return f"{PREFIX}:{site}:{minute}:top:{dim}"

    def dim_visitors(self, site: str, minute: int, dim: str, value: str) -> str:
        return f"{PREFIX}:{site}:{minute}:uv:{dim}:{value}"

    def dim_visitors_parts(self, site: str, dim: str) -> tuple[str, str]:
        """``(head, tail)`` such that ``head + str(m) + tail + value`` is
        :meth:`dim_visitors` ``(site, m, dim, value)``: for scripts that name a value's minutes."""
        return f"{PREFIX}:{site}:", f":uv:{dim}:"

    def hour_dim_visitors(self, site: str, hour: int, dim: str, value: str) -> str:
        """A value's visitors over a closed hour (Value hours)."""
        return f"{PREFIX}:{site}:h{hour}:uv:{dim}:{value}"

    def hour_merged(self, site: str, hour: int) -> str:
        """The hour's value-sketch marker: :data:`MERGING`, then :data:`MERGED` (Value hours)."""
        return f"{PREFIX}:{site}:h{hour}:merged"

    def hour_counters(self, site: str, hour: int) -> str:
        return f"{PREFIX}:{site}:h{hour}:c"

    def hour_visitors(self, site: str, hour: int) -> str:
        return f"{PREFIX}:{site}:h{hour}:uv"

    def hour_top(self, site: str, hour: int, dim: str) -> str:
        return f"{PREFIX}:{site}:h{hour}:top:{dim}"

    def engagements(self, site: str, minute: int, dim: str) -> str:
        """Engagement reports per value of ``dim`` (one of :data:`~footfall.vocabulary.ENGAGEMENT_DIMENSIONS`)."""
        return f"{PREFIX}:{site}:{minute}:eng:{dim}"

    def engaged_ms(self, site: str, minute: int, dim: str) -> str:
        """Engaged milliseconds per value of ``dim``, under the values of :meth:`engagements`."""
        return f"{PREFIX}:{site}:{minute}:engms:{dim}"

    def hour_engagements(self, site: str, hour: int, dim: str) -> str:
        return f"{PREFIX}:{site}:h{hour}:eng:{dim}"

    def hour_engaged_ms(self, site: str, hour: int, dim: str) -> str:
        return f"{PREFIX}:{site}:h{hour}:engms:{dim}"

    def revenues(self, site: str, minute: int) -> str:
        """Custom events with a valid amount per revenue value (see Revenue)."""
        return f"{PREFIX}:{site}:{minute}:rev"

    def revenue_units(self, site: str, minute: int) -> str:
        """Their amounts in units, under the values of :meth:`revenues`."""
        return f"{PREFIX}:{site}:{minute}:revu"

    def hour_revenues(self, site: str, hour: int) -> str:
        return f"{PREFIX}:{site}:h{hour}:rev"

    def hour_revenue_units(self, site: str, hour: int) -> str:
        return f"{PREFIX}:{site}:h{hour}:revu"

    def active(self, site: str) -> str:
        return f"{PREFIX}:{site}:active"

    def dedup(self, site: str, generation: int) -> str:
        """The set of marks of ``site``'s events counted in ``generation``."""
        return f"{PREFIX}:seen:{site}:{generation}"

    def dedup_site_pattern(self, site: str) -> str:
        """SCAN pattern of every dedup set of a site."""
        return f"{PREFIX}:seen:{site}:*"

    def dedup_generation(self, now_ms: int) -> int:
        return now_ms // (self.dedup_s * 1000)

    def dedup_expires_at(self, generation: int) -> int:
        """Unix seconds at which a generation's marks expire: once the next one has ended."""
        return (generation + 2) * self.dedup_s

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
