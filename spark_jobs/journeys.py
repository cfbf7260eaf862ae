"""Journeys in the nightly rollup: each session's steps, as a short sequence of labels, per site and
local day. A pure DataFrame transform (built-in Spark SQL functions only).

What is counted (documented for users in ``docs/reports.md``, "Journeys"):

* A *step* is a human page view (label: its path) or custom event (label: its name). Bots,
  engagement reports and server-side requests are never steps; nor are events without a
  ``visitor_id`` (they cannot be linked to any other event), a page view whose path does not start
  with ``/`` or a custom event whose name does (its label could be taken for the other kind).
* A *journey session* is one visitor's steps in ``(ts, event_id)`` order with no gap over
  ``gap_minutes`` (30, as sessions and funnels split), belonging to the local day it starts on.
  A step right after the same label (a reload, a repeated event) is the same step: consecutive
  equal labels collapse into one.
* Each session keeps :func:`footfall.journeys.kept_length` of its steps (``truncated`` when that is
  fewer than it had), which answers every journey of up to :data:`footfall.journeys.MAX_STEPS`
  steps from or to any step first reached within the first
  :data:`footfall.journeys.STORED_STEPS_CAP`.
* Visitor ids are not stored: a visitor is a number (``visitor``) from 1 per site and day, given
  in the order of the day's visitor ids. Sessions of one visitor with the same kept steps are one
  row with their count, so a visitor's journeys count them once per day.
"""

from __future__ import annotations

from collections.abc import Iterable

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from footfall.journeys import MAX_STEPS, STORED_STEPS_CAP
from footfall.vocabulary import ENGAGEMENT, SESSION_GAP_MINUTES
from spark_jobs.columns import VISITOR, human, with_visitor_key

# Output per (site, day, visitor, kept steps, truncated): the sessions starting that day.
JOURNEY_DDL = "site_id STRING, day STRING, visitor INT, steps ARRAY<STRING>, truncated BOOLEAN, sessions BIGINT"
_NOT_STEPS = (ENGAGEMENT, "request")


def step_label() -> Column:
    """A row's step label, null when it is not a step (see the module docstring)."""
    is_page = F.col("type") == "pageview"
    return (
        F.when(is_page & F.col("path").startswith("/"), F.col("path"))
        .when(~is_page & ~F.col("type").isin(*_NOT_STEPS) & ~F.col("type").startswith("/"), F.col("type"))
    )  # fmt: skip


def kept(steps: Column) -> Column:
    """How many leading elements of ``steps`` are kept, as :func:`footfall.journeys.kept_length`
    says: array_distinct keeps first occurrences in order, so its last element's position is the
    last first occurrence."""
    head = F.slice(steps, 1, STORED_STEPS_CAP)
    last_new = F.array_position(head, F.element_at(F.array_distinct(head), -1)).cast("int")
    return F.least(F.size(steps), last_new + F.lit(MAX_STEPS), F.lit(STORED_STEPS_CAP))


def journey_sessions(events: DataFrame, days: Iterable[str], gap_minutes: int = SESSION_GAP_MINUTES) -> DataFrame:
    """Per (site, local day, visitor number, kept steps, truncated): the sessions (:data:`JOURNEY_DDL`).

    ``events``: localized, deduplicated events of every type (sessions are built over all of them,
    so one begun the evening before is seen whole, and kept by the day it starts on); ``days``: the
    local days wanted."""
    wanted = sorted(set(days))
    steps = with_visitor_key(events.where(human() & F.col("visitor_id").isNotNull())).withColumn("label", step_label())
    steps = steps.where(F.col("label").isNotNull())
    in_order = Window.partitionBy(*VISITOR).orderBy("ts", "event_id")
    prev_ts = F.lag("ts").over(in_order)
    starts = (prev_ts.isNull() | (F.col("ts") - prev_ts > gap_minutes * 60_000)).cast("int")
    numbered = (
        steps.withColumn("_start", starts)
        .withColumn("_prev", F.lag("label").over(in_order))
        .withColumn("_session", F.sum("_start").over(in_order.rowsBetween(Window.unboundedPreceding, 0)))
        # A reload is no step of its own; the session's first step always is (its _prev is the
        # previous session's last).
        .where((F.col("_start") == 1) | (F.col("label") != F.col("_prev")))
    )
    sessions = numbered.groupBy(*VISITOR, "_session").agg(
        F.array_sort(F.collect_list(F.struct("ts", "event_id", "day", "label"))).alias("_steps")
    )
    labels = F.transform("_steps", lambda s: s["label"])
    # _alone ("" here: every row has a visitor) stays a key so that the rows, partitioned by VISITOR,
    # are grouped per visitor and steps without a shuffle.
    per_session = (
        sessions.select(*VISITOR, F.element_at("_steps", 1)["day"].alias("day"), labels.alias("_all"))
        .where(F.col("day").isin(wanted))
        .withColumn("_kept", kept(F.col("_all")))
        .select(
            *VISITOR,
            "day",
            F.slice("_all", 1, F.col("_kept")).alias("steps"),
            (F.col("_kept") < F.size("_all")).alias("truncated"),
        )
    )
    number = F.dense_rank().over(Window.partitionBy("site_id", "day").orderBy("visitor_id"))
    return (
        per_session.groupBy(*VISITOR, "day", "steps", "truncated")
        .agg(F.count("*").alias("sessions"))
        .withColumn("visitor", number.cast("int"))
        .select("site_id", "day", "visitor", "steps", "truncated", "sessions")
    )
