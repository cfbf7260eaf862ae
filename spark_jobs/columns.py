"""Column expressions every rollup transform shares: who is human, the referrer label, and the
archived ``props`` read as text (built-in Spark SQL functions only)."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from footfall.vocabulary import (
    ENGAGED_MS_PROP,
    MAX_ENGAGED_MS,
    PAGEVIEW_ID_PROP,
    REF_DIRECT,
    REF_UNKNOWN,
    SCROLL_DEPTH_PROP,
)


def is_bot() -> Column:
    # Only an explicit True makes a bot: an event the collector could not classify is human.
    return F.coalesce(F.col("is_bot"), F.lit(False))


def human() -> Column:
    return ~is_bot()


# One visitor's events: an event without ``visitor_id`` is a visitor of its own (its ``_alone`` is its
# ``event_id``, "" otherwise), so null visitor ids never share one partition, group or session.
VISITOR = ("site_id", "visitor_id", "_alone")


def with_visitor_key(events: DataFrame) -> DataFrame:
    """``events`` with the ``_alone`` column of :data:`VISITOR` (kept when it is there already: rows
    partitioned by :data:`VISITOR` then need no shuffle for a per-visitor window or group)."""
    if "_alone" in events.columns:
        return events
    return events.withColumn("_alone", F.when(F.col("visitor_id").isNull(), F.col("event_id")).otherwise(F.lit("")))


def visitor_keys(events: DataFrame) -> list[str]:
    """The columns telling one visitor's rows apart within a group: ``visitor_id``, and ``_alone`` when
    ``events`` has it. Counting distinct visitors in two steps, per visitor then per group, groups by
    these first: without a shuffle when the rows are partitioned by :data:`VISITOR`."""
    return ["visitor_id", "_alone"] if "_alone" in events.columns else ["visitor_id"]


def ref_label(domain: str = "ref_domain", referrer: str = "referrer") -> Column:
    """The referrer label, as :func:`footfall.vocabulary.ref_label` gives it."""
    sent = F.length(F.trim(F.col(referrer))) > 0
    named = F.col(domain).isNotNull() & (F.col(domain) != "")
    return F.when(named, F.col(domain)).when(sent, F.lit(REF_UNKNOWN)).otherwise(F.lit(REF_DIRECT))


def props_map(props: str = "props") -> Column:
    """The archived ``props`` JSON object as ``map<string,string>``; null when it is not an object.

    Read through a variant, whose text of a number is exact for integers and plain decimals
    (``3.0`` reads ``3``), so a value's text is :func:`footfall.goals.prop_text` of the JSON
    value, as the speed layer matches it; a JSON null is a null value (text "")."""
    return F.try_variant_get(F.try_parse_json(F.col(props)), "$", "map<string,string>")


def _number(props: Column, name: str) -> Column:
    """A property as a finite DOUBLE, null when absent, not a number, NaN or infinite."""
    value = props[name].try_cast("double")
    return F.when(~F.isnan(value) & (F.abs(value) < float("inf")), value)


def engaged_ms(props: Column) -> Column:
    """An engagement report's engaged milliseconds (BIGINT): capped at MAX_ENGAGED_MS, 0 when
    missing, negative or not a number."""
    value = F.coalesce(_number(props, ENGAGED_MS_PROP), F.lit(0.0))
    return F.least(F.greatest(value, F.lit(0.0)), F.lit(float(MAX_ENGAGED_MS))).cast("long")


def scroll_depth(props: Column) -> Column:
    """An engagement report's scroll depth (INT 0 to 100, out-of-range values clamped), null
    when the report carries none."""
    value = _number(props, SCROLL_DEPTH_PROP)
    # least/greatest skip nulls: clamp only a depth that is there.
    return F.when(value.isNotNull(), F.least(F.greatest(value, F.lit(0.0)), F.lit(100.0))).cast("int")


def pageview_key(props: Column) -> Column:
    """The page view an engagement report belongs to: its ``pageview_id``, or, without one, the
    report's own ``event_id`` (it is then a page view of its own)."""
    given = props[PAGEVIEW_ID_PROP]
    return F.when(F.length(given) > 0, given).otherwise(F.col("event_id"))
