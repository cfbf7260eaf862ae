"""The nightly rollup's transforms: pure DataFrame → DataFrame functions over archive rows.

No I/O, no SparkSession, no clock: the extract step reads the archive with
:data:`archive.schema.SPARK_DDL` and passes DataFrames and days in; the load step
writes what comes out. Only built-in Spark SQL functions are used (no Python UDFs), so
everything runs in the JVM.

Pipeline (:func:`rollup` wires it)::

    archive rows ─ dedupe ─ localize ─┬─ only_humans ─ type = pageview ─ sessionize ─┐
                                      │                                              ▼
                                      └──────────────────────── daily_totals, hourly_totals, breakdowns

* :func:`dedupe` makes counts exactly-once: the archive is at-least-once, so one
  ``event_id`` may sit in several files.
* :func:`localize` turns the event time (``ts``, int64 ms UTC) into the site's wall clock:
  every ``day`` below is the site's own, so "Monday" means the site's Monday. Hours are
  buckets named by their UTC start (``bucket_start``), not wall-clock labels, so the hour a
  clock change repeats is two buckets and one it skips is none
  (:mod:`historical.buckets`). A site without a time zone row is rolled up in UTC.
* Buckets come from the event time, never the arrival time: a late event lands on the day
  it happened, and re-rolling that day picks it up.

What the metrics mean (``day`` is always a local day; bots never count as humans):

* ``pageviews``: human events of type ``pageview``.
* ``visitors``: distinct non-null ``visitor_id`` of human events other than engagement
  reports (a report alone, e.g. from a tab hidden after midnight, makes no visitor; its
  engaged time still counts on the day it arrives). Visitor ids are salted
  daily and the salt is destroyed (DESIGN invariant 5), so a visitor is only recognisable
  within one day: someone returning on another day is a new visitor. Visitor counts are
  per bucket (day, hour, breakdown value) and must never be summed across buckets: the
  sum of daily visitors is not the visitors of a week.
* ``sessions``: runs of one visitor's page views with no gap longer than ``gap_minutes``
  (30 by default). A session belongs to the day and hour it starts in, also when it runs
  past midnight; its page views still count on the days they happened.
* ``bounces``: sessions of exactly one page view; ``bounce_rate`` = bounces / sessions.
* ``visit_duration_s``: mean of the sessions' (last page view - first page view) in
  seconds; a bounce lasts 0 s, as there is no later page view to measure it by.
* ``events``: human events of every type; ``custom_events``: those whose type is not in
  :data:`footfall.vocabulary.NON_CUSTOM_TYPES` (page views, requests, engagement reports);
  ``bot_events``: events flagged ``is_bot``, of every type.
* Custom events, their properties, goals and engaged time: :mod:`spark_jobs.conversions`.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping, Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from footfall.goals import FunnelSpec, GoalSpec
from footfall.vocabulary import ENGAGEMENT, NON_CUSTOM_TYPES, REFPAGE_SEPARATOR, SESSION_GAP_MINUTES
from spark_jobs.columns import VISITOR, engaged_ms, human, is_bot, props_map, ref_label, visitor_keys, with_visitor_key
from spark_jobs.conversions import (
    engagement_breakdowns,
    event_breakdowns,
    event_prop_breakdowns,
    goal_breakdowns,
    goal_source_breakdowns,
    with_engagement,
)
from spark_jobs.funnels import funnel_steps
from spark_jobs.journeys import journey_sessions

DEFAULT_TZ = "UTC"
# The site's zone, once the zone table is joined on (SQL: :func:`_bucket_start` writes its CASE as text).
_ZONE = f"coalesce(_tz, '{DEFAULT_TZ}')"
_ZONE_NAME = re.compile(r"[A-Za-z0-9_+\-]+(/[A-Za-z0-9_+\-]+)*")  # IANA names: no quote can end the SQL literal

_MICROS_PER_HOUR = 3_600_000_000
_MS_PER_HOUR = 3_600_000
_MICROS_PER_DAY = 24 * _MICROS_PER_HOUR


# The shared column expressions (spark_jobs.columns), under the names this module always used.
_is_bot, _human, _ref = is_bot, human, ref_label


def dedupe(events: DataFrame, copies: str | None = None) -> DataFrame:
    """One row per ``(site_id, event_id)``: the copy received first.

    Ties on ``received_at`` go to the lowest ``kafka_partition``, then ``kafka_offset``, so
    the choice never depends on file or partition order. Output: the input's columns, and with
    ``copies`` a column of that name (LONG): how many rows of the input the event had.
    """
    first = Window.partitionBy("site_id", "event_id").orderBy(
        F.col("received_at").asc_nulls_last(),
        F.col("kafka_partition").asc_nulls_last(),
        F.col("kafka_offset").asc_nulls_last(),
    )
    ranked = events.withColumn("_rank", F.row_number().over(first))
    if copies is not None:
        # The same window, whole: counted where the copies already are, with no shuffle of its own.
        ranked = ranked.withColumn(
            copies, F.count("*").over(first.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing))
        )
    return ranked.where(F.col("_rank") == 1).drop("_rank")


def localize(events: DataFrame, site_tz: DataFrame, transitions: Sequence[tuple[str, int]]) -> DataFrame:
    """The events with their time on the site's wall clock and their hourly bucket.

    ``site_tz`` has columns ``site_id``, ``tz`` (an IANA zone name); sites without a row, or
    with a null ``tz``, use UTC. An unknown zone name fails the job (Spark raises
    ``INVALID_TIMEZONE``) rather than rolling a site up on the wrong days. ``transitions``:
    ``(zone, ms)`` of the instants at which the zones' offsets change, at least those within
    the events' time span (:func:`historical.buckets.span_transitions`; a few per zone).

    Output: the input's columns plus ``local_ts`` (TIMESTAMP: the local wall-clock time,
    as ``from_utc_timestamp`` gives it), ``day`` (STRING ``YYYY-MM-DD``, local),
    ``local_hour`` (INT 0 to 23, local wall-clock hour: a label, repeated when the clock
    falls back) and ``bucket_start`` (BIGINT ms UTC: the start of the event's hourly bucket,
    as :func:`historical.buckets.day_buckets` defines them: the last instant at or before the
    event at which the wall clock read ``HH:00`` or the zone's offset changed).
    """
    # One zone per site whatever the table holds: a duplicated row must not duplicate events.
    zones = site_tz.groupBy("site_id").agg(F.min("tz").alias("_tz"))
    zone = F.expr(_ZONE)
    local_ts = F.from_utc_timestamp(F.timestamp_millis(F.col("ts")), zone)
    # from_utc_timestamp shifts the instant so that it *renders in UTC* as the local wall
    # clock; hour() or date_format() would render it in spark.sql.session.timeZone and be
    # wrong on any session not set to UTC. The raw micros are the wall clock in every session.
    wall_micros = F.unix_micros(F.col("local_ts"))
    offset_ms = F.floor(wall_micros / 1000) - F.col("ts")
    # The wall clock's last HH:00 taken back to UTC with the event's own offset: the bucket's
    # start unless the offset changed since then (then the change starts the bucket).
    wall_hour_ms = F.floor(wall_micros / _MICROS_PER_HOUR) * _MS_PER_HOUR
    candidate = (wall_hour_ms - offset_ms).cast("long")
    located = (
        events.join(F.broadcast(zones), "site_id", "left")
        .withColumn("local_ts", local_ts)
        .withColumn("_candidate", candidate)
    )
    return (
        located.withColumn(
            "day", F.date_from_unix_date(F.floor(wall_micros / _MICROS_PER_DAY).cast("int")).cast("string")
        )
        .withColumn("local_hour", F.pmod(F.floor(wall_micros / _MICROS_PER_HOUR), F.lit(24)).cast("int"))
        .withColumn("bucket_start", _bucket_start(transitions))
        .select(*events.columns, "local_ts", "day", "local_hour", "bucket_start")
    )


def _bucket_start(transitions: Sequence[tuple[str, int]]) -> Column:
    """``_candidate``, or the zone's offset change in ``(_candidate, ts]`` when there is one.

    Such a change lies less than an hour before the event, so only events in the UTC hour of a
    change or the hour after need looking at (a hash-set test); for them one CASE over the
    listed changes finds it. Literals, not a join: no extra Spark stage, and the list is short."""
    if not transitions:
        return F.col("_candidate")
    hours = sorted({at // _MS_PER_HOUR + k for _, at in transitions for k in (0, 1)})
    near = F.floor(F.col("ts") / _MS_PER_HOUR).isin(hours)
    # The CASE as SQL text, parsed by the JVM in one call: built from Column operators it costs
    # a round trip per literal and operator, seconds for the changes of a backfill over years.
    for name, _ in transitions:
        if not _ZONE_NAME.fullmatch(name):
            raise ValueError(f"not a time zone name: {name!r}")
    branches = " ".join(
        f"WHEN {_ZONE} = '{name}' AND _candidate < {int(at)} AND ts >= {int(at)} THEN {int(at)}"
        for name, at in transitions
    )
    change = F.expr(f"CASE {branches} END")
    return F.when(near, F.coalesce(change, F.col("_candidate"))).otherwise(F.col("_candidate")).cast("long")


def only_humans(events: DataFrame) -> DataFrame:
    """The events not flagged as bots (``is_bot`` false or null). Output: the input's columns."""
    return events.where(_human())


def only_bots(events: DataFrame) -> DataFrame:
    """The events flagged as bots (``is_bot`` true). Output: the input's columns."""
    return events.where(_is_bot())


def sessionize(pageviews: DataFrame, gap_minutes: int = SESSION_GAP_MINUTES) -> DataFrame:
    """:func:`sessions_by_visitor` without its ``_alone`` column."""
    return sessions_by_visitor(pageviews, gap_minutes).drop("_alone")


def sessions_by_visitor(pageviews: DataFrame, gap_minutes: int = SESSION_GAP_MINUTES) -> DataFrame:
    """One row per session of localized, deduplicated human page views.

    Per ``(site_id, visitor_id)``, ordered by ``ts`` then ``event_id``, a page view more
    than ``gap_minutes`` after the previous one starts a new session. A page view without
    ``visitor_id`` cannot be linked to any other and is a session of its own.

    Output: ``site_id``, ``visitor_id``, ``session_id`` (``site_id|visitor_id|first
    event_id``, visitor empty when null), ``start_ts``, ``end_ts`` (BIGINT ms), ``day`` and
    ``bucket_start`` (of the start), ``pageviews`` (INT), ``duration_s`` (DOUBLE),
    ``is_bounce`` (one page view), and of the first page view: ``entry_page`` (path),
    ``entry_ref_domain`` (the referrer label: ``(direct)``, ``(unknown)`` or the domain),
    ``entry_ref_type``, ``entry_utm_source``, ``entry_utm_medium``, ``entry_utm_campaign``,
    ``entry_country``, ``entry_browser``, ``entry_os``, ``entry_device`` (a goal's converting
    visitors are attributed to these: :func:`spark_jobs.conversions.goal_source_breakdowns`), and
    ``_alone`` (:data:`spark_jobs.columns.VISITOR`: the page view's own ``event_id`` without a visitor).
    """
    in_order = Window.partitionBy(*VISITOR).orderBy("ts", "event_id")
    prev_ts = F.lag("ts").over(in_order)
    starts = (prev_ts.isNull() | (F.col("ts") - prev_ts > gap_minutes * 60_000)).cast("int")
    # Running count of starts = session number; ROWS frame so it never depends on peers.
    number = F.sum("_start").over(in_order.rowsBetween(Window.unboundedPreceding, Window.currentRow))
    # min over a struct led by (ts, event_id) picks the first page view's fields deterministically
    # (min_by would pick arbitrarily between equal ts).
    first_fields = ["ts", "event_id", "day", "bucket_start", "path", "ref_domain", "referrer", "ref_type"]
    first_fields += ["utm_source", "utm_medium", "utm_campaign", "country", "ua_browser", "ua_os", "ua_device"]
    sessions = (
        with_visitor_key(pageviews)
        .withColumn("_start", starts)
        .withColumn("_session", number)
        .groupBy("site_id", "visitor_id", "_alone", "_session")
        .agg(
            F.min(F.struct(*first_fields)).alias("first"),
            F.max("ts").alias("end_ts"),
            F.count("*").cast("int").alias("pageviews"),
        )
    )
    return sessions.select(
        "site_id",
        "visitor_id",
        F.concat_ws("|", "site_id", F.coalesce("visitor_id", F.lit("")), "first.event_id").alias("session_id"),
        F.col("first.ts").alias("start_ts"),
        "end_ts",
        "first.day",
        "first.bucket_start",
        "pageviews",
        ((F.col("end_ts") - F.col("first.ts")) / 1000.0).alias("duration_s"),
        (F.col("pageviews") == 1).alias("is_bounce"),
        F.col("first.path").alias("entry_page"),
        _ref("first.ref_domain", "first.referrer").alias("entry_ref_domain"),
        F.col("first.ref_type").alias("entry_ref_type"),
        F.col("first.utm_source").alias("entry_utm_source"),
        F.col("first.utm_medium").alias("entry_utm_medium"),
        F.col("first.utm_campaign").alias("entry_utm_campaign"),
        F.col("first.country").alias("entry_country"),
        F.col("first.ua_browser").alias("entry_browser"),
        F.col("first.ua_os").alias("entry_os"),
        F.col("first.ua_device").alias("entry_device"),
        "_alone",
    )


def _event_counts(events: DataFrame, keys: list[str]) -> DataFrame:
    is_pageview = F.col("type") == "pageview"
    is_engagement = F.col("type") == ENGAGEMENT
    # Per visitor first, then per bucket: a visitor's rows are one group, so the distinct count is a count.
    per_visitor = events.groupBy(*keys, *visitor_keys(events)).agg(
        F.count_if(_human() & is_pageview).alias("pageviews"),
        # A visitor is someone who did something: an engagement report (sent as a tab is hidden,
        # maybe after midnight) makes no visitor on its own.
        F.max(_human() & ~is_engagement).alias("_visitor"),
        F.count_if(_human()).alias("events"),
        F.count_if(_is_bot()).alias("bot_events"),
        F.count_if(_human() & ~F.col("type").isin(*NON_CUSTOM_TYPES)).alias("custom_events"),
        # CASE evaluates lazily: only engagement reports' props are parsed.
        F.sum(F.when(_human() & is_engagement, engaged_ms(props_map()))).alias("engaged_ms"),
        F.count_if(_human() & is_engagement).alias("engagements"),
    )
    return per_visitor.groupBy(*keys).agg(
        F.sum("pageviews").alias("pageviews"),
        F.count(F.when(F.col("_visitor"), F.col("visitor_id"))).alias("visitors"),
        *[F.sum(c).alias(c) for c in ("events", "bot_events", "custom_events", "engaged_ms", "engagements")],
    )


def _session_counts(sessions: DataFrame, keys: list[str]) -> DataFrame:
    return sessions.groupBy(*keys).agg(
        F.count("*").alias("sessions"),
        F.count_if("is_bounce").alias("bounces"),
        F.avg("duration_s").alias("visit_duration_s"),
    )


def _totals(events: DataFrame, sessions: DataFrame, keys: list[str]) -> DataFrame:
    # Full outer join: a bucket may have events but no session start (bots only, a session
    # that began the hour before) and, given arbitrary inputs, sessions but no events.
    joined = _event_counts(events, keys).join(_session_counts(sessions, keys), keys, "full")
    zero = ["pageviews", "visitors", "events", "bot_events", "custom_events", "sessions", "bounces"]
    zero += ["engaged_ms", "engagements"]
    return joined.fillna(0, subset=zero).fillna(0.0, subset=["visit_duration_s"])


def daily_totals(events: DataFrame, sessions: DataFrame) -> DataFrame:
    """Site totals per local day.

    ``events``: localized, deduplicated events of all types, bots included; ``sessions``:
    from :func:`sessionize`. A day with only bot events still gets a row (zeros elsewhere).

    Output per ``(site_id, day)``: ``pageviews``, ``visitors``, ``sessions`` (started that
    day), ``bounces`` (LONG), ``bounce_rate`` (DOUBLE, 0.0 without sessions),
    ``visit_duration_s`` (DOUBLE mean, 0.0 without sessions), ``events``, ``bot_events``,
    ``custom_events``, ``engaged_ms`` (each engagement report's capped at MAX_ENGAGED_MS, see
    :func:`spark_jobs.columns.engaged_ms`), ``engagements`` (reports) (LONG).
    """
    totals = _totals(events, sessions, ["site_id", "day"])
    rate = F.when(F.col("sessions") > 0, F.col("bounces") / F.col("sessions")).otherwise(F.lit(0.0))
    return totals.select(
        "site_id",
        "day",
        "pageviews",
        "visitors",
        "sessions",
        "bounces",
        rate.alias("bounce_rate"),
        "visit_duration_s",
        "events",
        "bot_events",
        "custom_events",
        "engaged_ms",
        "engagements",
    )


def hourly_totals(events: DataFrame, sessions: DataFrame) -> DataFrame:
    """Site totals per hourly bucket of the local day; inputs as for :func:`daily_totals`.

    Output per ``(site_id, day, bucket_start)`` (the bucket's UTC start in ms, so a repeated
    local hour is two rows): ``pageviews``, ``visitors`` (distinct within the bucket),
    ``sessions`` (started in it), ``events``, ``bot_events`` (LONG).
    """
    keys = ["site_id", "day", "bucket_start"]
    totals = _totals(events, sessions, keys)
    return totals.select(*keys, "pageviews", "visitors", "sessions", "events", "bot_events")


def _dimensions() -> list[tuple[str, Column]]:
    """(dimension, value) of the page-view breakdowns; a null value leaves the row out."""
    return [
        ("page", F.col("path")),
        ("ref", _ref()),
        ("refurl", F.col("referrer")),
        ("refpage", F.concat(_ref(), F.lit(REFPAGE_SEPARATOR), F.col("path"))),
        ("ref_type", F.col("ref_type")),
        ("utm_source", F.col("utm_source")),
        ("utm_medium", F.col("utm_medium")),
        ("utm_campaign", F.col("utm_campaign")),
        ("browser", F.col("ua_browser")),
        ("os", F.col("ua_os")),
        ("device", F.col("ua_device")),
        ("country", F.col("country")),
    ]


def breakdowns(pageviews: DataFrame, sessions: DataFrame) -> DataFrame:
    """Top-N material: page views per local day split by one dimension at a time, long format.

    ``pageviews``: localized, deduplicated human page views; ``sessions``: from
    :func:`sessionize`. Dimensions from page views: ``page``, ``ref`` (the referrer label:
    ``(direct)`` without a referrer, ``(unknown)`` for one naming no host or app), ``refurl``,
    ``refpage`` (``ref + "\\u001f" + path``: which referrer sends traffic to which page),
    ``ref_type``, ``utm_source``, ``utm_medium``, ``utm_campaign``,
    ``browser``, ``os``, ``device``, ``country``; from sessions: ``entry_page``. A null value
    is left out (only ``ref`` is never null).

    Output per ``(site_id, day, dimension, value)``: ``pageviews``, ``visitors`` (LONG);
    ``sessions``, ``bounces`` (LONG) and ``visit_duration_s`` (DOUBLE mean) for
    ``entry_page``, null for the others; ``ref`` and ``page`` (STRING): the two halves of a
    ``refpage`` value, null for other dimensions.
    """
    # One scan and one shuffle for all dimensions: each page view becomes one row per
    # dimension, then a single group-by, instead of a union of twelve group-bys.
    pairs = F.array(*[F.struct(F.lit(name).alias("dimension"), value.alias("value")) for name, value in _dimensions()])
    is_refpage = F.col("dimension") == "refpage"
    visitor = visitor_keys(pageviews)
    keys = ["site_id", "day", "dimension", "value", "ref", "page"]
    per_page = (
        pageviews.select("site_id", "day", *visitor, "ref_domain", "referrer", "path", F.explode(pairs).alias("d"))
        .select(
            "site_id",
            "day",
            "d.dimension",
            "d.value",
            F.when(is_refpage, _ref()).alias("ref"),
            F.when(is_refpage, F.col("path")).alias("page"),
            *visitor,
        )
        .where(F.col("value").isNotNull())
        # Per visitor first (see _event_counts), then per value.
        .groupBy(*keys, *visitor)
        .agg(F.count("*").alias("pageviews"))
        .groupBy(*keys)
        .agg(F.sum("pageviews").alias("pageviews"), F.count("visitor_id").alias("visitors"))
        .withColumn("sessions", F.lit(None).cast("long"))
        .withColumn("bounces", F.lit(None).cast("long"))
        .withColumn("visit_duration_s", F.lit(None).cast("double"))
    )
    entry_keys = ["site_id", "day", F.col("entry_page").alias("value")]
    entry = (
        sessions.where(F.col("entry_page").isNotNull())
        .groupBy(*entry_keys, *visitor_keys(sessions))
        .agg(
            F.sum("pageviews").cast("long").alias("pageviews"),
            F.count("*").alias("sessions"),
            F.count_if("is_bounce").alias("bounces"),
            F.sum("duration_s").alias("_duration_s"),
        )
        .groupBy("site_id", "day", "value")
        .agg(
            F.sum("pageviews").alias("pageviews"),
            F.count("visitor_id").alias("visitors"),
            F.sum("sessions").alias("sessions"),
            F.sum("bounces").alias("bounces"),
            (F.sum("_duration_s") / F.sum("sessions")).alias("visit_duration_s"),
        )
        .withColumn("dimension", F.lit("entry_page"))
        .withColumn("ref", F.lit(None).cast("string"))
        .withColumn("page", F.lit(None).cast("string"))
    )
    columns = ["site_id", "day", "dimension", "value", "pageviews", "visitors", "sessions", "bounces"]
    columns += ["visit_duration_s", "ref", "page"]
    return per_page.select(*columns).unionByName(entry.select(*columns))


# The columns of rollup()'s breakdowns: those of breakdowns(), then those only some dimensions
# have (null elsewhere; the load step leaves null ones out of the documents): engaged time
# (page, ref), scroll depth (page), events (event, event_prop, goal, goal_src:*), an event
# property's parts (event_prop), a goal's name (goal), the goal of goal_src:* rows, and revenue
# (goal: conversions without it; goal_revenue, goal_revsrc:*: currency and sum in units).
BREAKDOWN_COLUMNS = ("site_id", "day", "dimension", "value", "pageviews", "visitors", "sessions", "bounces",
                     "visit_duration_s", "ref", "page")  # fmt: skip
BREAKDOWN_EXTRAS = ("engaged_ms", "engagements", "scroll_views", "scroll_sum", "events", "event", "prop",
                    "prop_value", "name", "goal_id", "no_revenue", "currency", "revenue")  # fmt: skip


def rollup(
    events: DataFrame,
    site_tz: DataFrame,
    days: Iterable[str | dt.date],
    transitions: Sequence[tuple[str, int]],
    gap_minutes: int = SESSION_GAP_MINUTES,
    funnels: Mapping[str, Sequence[FunnelSpec]] | None = None,
    goals: Mapping[str, Sequence[GoalSpec]] | None = None,
) -> dict[str, DataFrame]:
    """The whole rollup of ``days`` (local days, ``YYYY-MM-DD`` strings or dates).

    ``events`` are archive rows (SPARK_DDL) covering the days in every site's zone: the
    UTC dates from the day before the first to the day after the last, so that UTC+14 and
    UTC-12 sites are complete and sessions that began the evening before are seen whole.
    Sessions are built over all of ``events`` and then kept by start day; everything else
    is restricted to ``days``. ``transitions``: as for :func:`localize`. ``goals``: each
    site's goal definitions (none by default).

    Returns ``{"daily", "hourly", "breakdowns", "sessions", "funnels", "journeys"}`` as produced by
    :func:`daily_totals`, :func:`hourly_totals`, :func:`breakdowns`, :func:`sessionize` and
    :func:`spark_jobs.funnels.funnel_steps` of ``funnels`` (per site; none when None) and
    :func:`spark_jobs.journeys.journey_sessions`, whose
    attempts, like sessions, are seen whole and kept by the day they start; the breakdowns
    with engaged time joined on (:func:`spark_jobs.conversions.with_engagement`) and the
    ``event``, ``event_prop``, ``goal``, ``goal_src:*`` and ``goal_base:*`` rows of
    :mod:`spark_jobs.conversions` added:
    columns :data:`BREAKDOWN_COLUMNS`, :data:`BREAKDOWN_EXTRAS` null where a dimension does
    not have them. Each output re-derives the deduplicated events: a caller running them all
    persists :func:`localized` and calls :func:`rollup_localized`.
    """
    return rollup_localized(localized(events, site_tz, transitions), days, gap_minutes, funnels, goals)


# The archive columns some output of rollup() reads (the raw event, url, title, ... are never needed).
ROLLUP_COLUMNS = ("site_id", "event_id", "type", "ts", "received_at", "kafka_partition", "kafka_offset", "is_bot",
                  "visitor_id", "path", "referrer", "ref_domain", "ref_type", "utm_source", "utm_medium",
                  "utm_campaign", "country", "ua_browser", "ua_os", "ua_device", "props")  # fmt: skip


COPIES = "_copies"  # localized()'s column: the rows of the event read, the one kept included


def localized(events: DataFrame, site_tz: DataFrame, transitions: Sequence[tuple[str, int]]) -> DataFrame:
    """The rows every output of :func:`rollup` starts from: :func:`localize` of :func:`dedupe` of the
    :data:`ROLLUP_COLUMNS` of ``events``, with ``_alone`` (:data:`spark_jobs.columns.VISITOR`) and
    :data:`COPIES` (the event's rows in ``events``), partitioned by visitor and in time order within
    each (:func:`by_visitor`).

    A caller that persists them spares each output the archive read and the dedupe shuffle, and
    the outputs' per-visitor windows and groups their own shuffle and sort."""
    local = localize(dedupe(events.select(*ROLLUP_COLUMNS), copies=COPIES), site_tz, transitions)
    return by_visitor(local.drop("local_ts", "local_hour"))


def by_visitor(events: DataFrame) -> DataFrame:
    """``events`` with ``_alone``, hash-partitioned by :data:`spark_jobs.columns.VISITOR` and sorted by it
    then ``ts``, ``event_id`` within each partition: the order of sessions and funnel attempts."""
    return with_visitor_key(events).repartition(*VISITOR).sortWithinPartitions(*VISITOR, "ts", "event_id")


def rollup_localized(
    local: DataFrame,
    days: Iterable[str | dt.date],
    gap_minutes: int = SESSION_GAP_MINUTES,
    funnels: Mapping[str, Sequence[FunnelSpec]] | None = None,
    goals: Mapping[str, Sequence[GoalSpec]] | None = None,
) -> dict[str, DataFrame]:
    """:func:`rollup` of rows already :func:`localized`."""
    wanted = sorted({d.isoformat() if isinstance(d, dt.date) else d for d in days})
    human_pageviews = only_humans(local).where(F.col("type") == "pageview")
    sessions = sessions_by_visitor(human_pageviews, gap_minutes).where(F.col("day").isin(wanted))
    in_days = local.where(F.col("day").isin(wanted))
    humans = only_humans(in_days)
    pageview_rows = with_engagement(
        breakdowns(human_pageviews.where(F.col("day").isin(wanted)), sessions), engagement_breakdowns(humans)
    )
    all_rows = pageview_rows
    conversions = (
        event_breakdowns(humans),
        event_prop_breakdowns(humans),
        goal_breakdowns(humans, goals or {}, wanted),
        goal_source_breakdowns(humans, sessions, goals or {}),
    )
    for rows in conversions:
        all_rows = all_rows.unionByName(rows, allowMissingColumns=True)
    return {
        "daily": daily_totals(in_days, sessions),
        "hourly": hourly_totals(in_days, sessions),
        "breakdowns": all_rows.select(*BREAKDOWN_COLUMNS, *BREAKDOWN_EXTRAS),
        "sessions": sessions.drop("_alone"),
        "funnels": funnel_steps(local, funnels or {}, gap_minutes).where(F.col("day").isin(wanted)),
        # Each session's steps, kept by the day it starts on (spark_jobs.journeys).
        "journeys": journey_sessions(local, wanted, gap_minutes),
    }
