"""Funnels in the nightly rollup: per site, local day, funnel and step, the visitors who reached
the step and how long they took from the step before. A pure DataFrame transform.

Input: localized, deduplicated events (:func:`spark_jobs.transforms.localize` of
:func:`~spark_jobs.transforms.dedupe`); bots are left out here too, and so are engagement
reports and server-side requests, which are never steps nor "other events". What is left
(page views and custom events) are a visitor's *funnel events*, ordered by ``(ts, event_id)``.

What is counted (documented for users in ``docs/reports.md``):

* An *attempt* starts at a funnel event matching step 1. Each next step is the earliest later
  funnel event matching it (greedy), while the attempt lasts: with ``window_minutes`` 0, in
  the same session as the first step (the visitor's funnel events with no gap over
  ``gap_minutes``, 30 by default, as :func:`~spark_jobs.transforms.sessionize` splits page
  views, custom events included); otherwise at most ``window_minutes`` after the first step.
  In strict mode the visitor's next funnel event after a step must match the next step, or the
  attempt stops there. An attempt reaching step k reached steps 1 to k.
* Per visitor and day the *best* attempt counts: the one reaching the furthest step, of those
  the earliest started. An attempt belongs to the local day of its first step, even when later
  steps happen after midnight. Visitor ids rotate with the daily salt, so this only happens
  when the salt rotates later than the site's midnight: the ``daily`` policy (00:00 UTC) for a
  site east of UTC. The job reads the UTC date after the last day, which covers that.
* Step visitors are distinct visitors of that day; events without a ``visitor_id`` are each a
  visitor of their own (so they can only reach step 1). A range of days sums daily visitors:
  someone returning another day is a new visitor, as for every visitor count in
  :mod:`spark_jobs.transforms`.
* Per step k >= 2, over the visitors reaching it: the exact median of (ts of step k - ts of
  step k-1) in ms, and a histogram of those times over
  :data:`footfall.goals.FUNNEL_TIME_BOUNDS_MS` from which the query layer estimates the median
  of a range of days.

Algorithm (built-in Spark SQL functions only, no Python UDFs; no rescan per attempt):

1. Number each visitor's sessions with a running sum over their funnel events.
2. Give every event one row per funnel of its site, with a bit mask of the steps it matches
   (:func:`goal_matches`); keep rows matching a step (strict funnels keep every row, as
   other events break their attempts).
3. Per (funnel, visitor), one window over the rows in reverse order gives each row its rank
   from the end and, per step k, the rank of the nearest *later* row matching step k (the
   last non-null over the rows after it: an incrementally grown frame, not a rescan).
4. Collect each (funnel, visitor)'s rows into one array sorted by ``(ts, event_id)``. For
   every row matching step 1, ``aggregate`` over the steps follows those pointers (strict:
   the very next row) while the window or session holds: constant work per step, so a
   visitor with n rows and s starts costs two sorts of n plus O(s * steps), not O(n * s).
5. Keep each visitor's best attempt per start day, expand it into one row per step, and
   count, take medians and build histograms per (site, day, funnel, step).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from footfall.goals import FUNNEL_TIME_BOUNDS_MS, MAX_FUNNEL_STEPS, PAGE, FunnelSpec, GoalSpec
from footfall.vocabulary import ENGAGEMENT, SESSION_GAP_MINUTES
from spark_jobs.columns import VISITOR, with_visitor_key

# Output per (site_id, day, funnel_id, step): step is 1-based; median_ms is null for step 1
# and for steps nobody reached; times_ms has len(FUNNEL_TIME_BOUNDS_MS) + 1 counts (all 0
# for step 1).
FUNNEL_DDL = (
    "site_id STRING, day STRING, funnel_id STRING, step INT, visitors BIGINT, median_ms DOUBLE, times_ms ARRAY<BIGINT>"
)
_NOT_STEPS = (ENGAGEMENT, "request")  # never steps, never "other events" between steps


def goal_matches(goal: GoalSpec) -> Column:
    """Whether an archive row reaches ``goal``, as :meth:`GoalSpec.matches` decides it.

    Property values are read from the archived ``props`` JSON as text: Spark's JSON reader
    gives a string its text and any other scalar its JSON spelling (``true``, ``3``), as
    :func:`footfall.goals.prop_text` does."""
    if goal.kind == PAGE:
        return (F.col("type") == "pageview") & F.coalesce(F.col("path").rlike(goal.regex), F.lit(False))
    named = F.col("type") == goal.event
    if not goal.prop:
        return named
    props = F.from_json(F.col("props"), "map<string,string>")
    has = F.coalesce(F.map_contains_key(props, goal.prop), F.lit(False))
    # A null value reads as "" (prop_text(None)); a missing property never matches.
    return named & has & (F.coalesce(F.element_at(props, F.lit(goal.prop)), F.lit("")) == F.lit(goal.value))


def _step_mask(spec: FunnelSpec) -> Column:
    """Bit k-1 set when the row matches step k."""
    bits = [F.when(goal_matches(goal), F.lit(1 << k)).otherwise(F.lit(0)) for k, goal in enumerate(spec.steps)]
    total = bits[0]
    for bit in bits[1:]:
        total = total + bit
    return total.cast("int")


def _funnels_of_site(funnels: Mapping[str, Sequence[FunnelSpec]]) -> Column:
    """Per row, an array with one struct per funnel of its site (null for other sites)."""
    chosen: Column | None = None
    for site, specs in sorted(funnels.items()):
        entries = [
            F.struct(
                F.lit(spec.funnel_id).alias("funnel_id"),
                _step_mask(spec).alias("mask"),
                F.lit(len(spec.steps)).alias("steps"),
                F.lit(spec.window_minutes * 60_000).cast("long").alias("window_ms"),
                F.lit(spec.strict).alias("strict"),
            )
            for spec in specs
        ]
        here = F.col("site_id") == F.lit(site)
        chosen = F.when(here, F.array(*entries)) if chosen is None else chosen.when(here, F.array(*entries))
    assert chosen is not None
    return chosen


def _check(funnels: Mapping[str, Sequence[FunnelSpec]]) -> dict[str, list[FunnelSpec]]:
    """The sites with funnels; a funnel id given twice for one site is an error."""
    out = {}
    for site, specs in funnels.items():
        ids = [spec.funnel_id for spec in specs]
        if len(set(ids)) != len(ids):
            raise ValueError(f"site {site!r}: funnel ids must be unique, got {sorted(ids)}")
        if specs:
            out[site] = list(specs)
    return out


def _empty(events: DataFrame) -> DataFrame:
    """No rows, with the output's columns and types (no SparkSession needed)."""
    columns = [
        F.lit(None).cast(kind).alias(name)
        for name, kind in (
            ("site_id", "string"), ("day", "string"), ("funnel_id", "string"), ("step", "int"),
            ("visitors", "bigint"), ("median_ms", "double"), ("times_ms", "array<bigint>"),
        )
    ]  # fmt: skip
    return events.where(F.lit(False)).select(*columns)


def _attempt(events: Column, start: Column) -> Column:
    """The greedy attempt from ``start`` (an element of ``events``): ``times``, the ts of each
    step reached (its size is the furthest step), following the ``next`` pointers (strict: the
    next element) while the window or session holds."""
    count = F.size(events)

    def index(rank: Column) -> Column:  # ranks count from the end; array indexes from 1
        return count - rank + 1

    def advance(acc: Column, k: Column) -> Column:
        bit = F.pow(F.lit(2), k - 1).cast("int")  # exact: k <= 8
        after = F.try_element_at(events, acc["at"] + 1)
        strict_next = F.when(after["mask"].bitwiseAND(bit) != 0, acc["at"] + 1)
        loose_next = index(F.try_element_at(F.try_element_at(events, acc["at"])["next"], k - 1))
        nxt = F.when(F.col("strict"), strict_next).otherwise(loose_next)
        reached = F.try_element_at(events, nxt)
        inside = F.when(F.col("window_ms") > 0, reached["ts"] - start["ts"] <= F.col("window_ms")).otherwise(
            reached["_session"] == start["_session"]
        )
        goes_on = acc["open"] & nxt.isNotNull() & F.coalesce(inside, F.lit(False))
        return F.when(
            goes_on,
            F.struct(
                nxt.alias("at"),
                F.concat(acc["times"], F.array(reached["ts"])).alias("times"),
                F.lit(True).alias("open"),
            ),
        ).otherwise(F.struct(acc["at"].alias("at"), acc["times"].alias("times"), F.lit(False).alias("open")))

    first = F.struct(index(start["_rank"]).alias("at"), F.array(start["ts"]).alias("times"), F.lit(True).alias("open"))
    return F.aggregate(F.sequence(F.lit(2), F.col("steps")), first, advance)["times"]


def funnel_steps(
    events: DataFrame, funnels: Mapping[str, Sequence[FunnelSpec]], gap_minutes: int = SESSION_GAP_MINUTES
) -> DataFrame:
    """Per (site, local day of the attempts' first step, funnel, step): visitors, median time
    from the step before, and its histogram (:data:`FUNNEL_DDL`); see the module docstring.

    ``events``: localized, deduplicated events of every type; ``funnels``: the funnels of each
    site (sites without any are skipped). Every (site, day, funnel) with at least one attempt
    gets a row per step, 0 visitors for steps nobody reached; a day without attempts gets none.
    """
    defined = _check(funnels)
    if not defined:
        return _empty(events)
    eligible = events.where(
        ~F.coalesce(F.col("is_bot"), F.lit(False))  # as transforms.only_humans
        & ~F.col("type").isin(*_NOT_STEPS)
        & F.col("site_id").isin(*sorted(defined))
    )
    in_order = Window.partitionBy(*VISITOR).orderBy("ts", "event_id")
    prev_ts = F.lag("ts").over(in_order)
    starts = (prev_ts.isNull() | (F.col("ts") - prev_ts > gap_minutes * 60_000)).cast("int")
    sessions = (
        with_visitor_key(eligible)
        .withColumn("_start", starts)
        .withColumn("_session", F.sum("_start").over(in_order.rowsBetween(Window.unboundedPreceding, 0)))
    )
    rows = (
        sessions.select(*VISITOR, "ts", "event_id", "day", "_session", F.explode(_funnels_of_site(defined)).alias("f"))
        .select("*", "f.*")
        .drop("f")
        .where((F.col("mask") != 0) | F.col("strict"))
    )

    funnel_visitor = ["site_id", "funnel_id", "visitor_id", "_alone", "steps", "window_ms", "strict"]
    backward = Window.partitionBy(*funnel_visitor).orderBy(F.desc("ts"), F.desc("event_id"))
    later = backward.rowsBetween(Window.unboundedPreceding, -1)
    nearest = [
        F.last(F.when(F.col("mask").bitwiseAND(1 << (k - 1)) != 0, F.col("_rank")), ignorenulls=True).over(later)
        for k in range(2, MAX_FUNNEL_STEPS + 1)
    ]
    element = F.struct("ts", "event_id", "day", "_session", "mask", "_rank", "next")
    per_visitor = (
        rows.withColumn("_rank", F.row_number().over(backward))
        .withColumn("next", F.array(*nearest))
        .groupBy(*funnel_visitor)
        .agg(F.array_sort(F.collect_list(element)).alias("_events"))
    )
    attempts = F.transform(
        F.filter(F.col("_events"), lambda e: e["mask"].bitwiseAND(1) != 0),
        lambda e: F.struct(
            e["day"].alias("day"), (-e["ts"]).alias("neg_start"), _attempt(F.col("_events"), e).alias("times")
        ),
    )
    best = (
        per_visitor.select(*funnel_visitor, F.explode(attempts).alias("a"))
        .groupBy(*funnel_visitor, F.col("a.day").alias("day"))
        # Furthest step first, then the earliest start; the times make the pick total.
        .agg(F.max(F.struct(F.size("a.times").alias("level"), "a.neg_start", "a.times")).alias("best"))
    )
    per_step = best.select(
        "site_id", "day", "funnel_id", F.col("best.level").alias("level"), F.col("best.times").alias("times"),
        F.explode(F.sequence(F.lit(1), F.col("steps"))).alias("step"),
    )  # fmt: skip
    reached = F.col("step") <= F.col("level")
    took = F.when(
        reached & (F.col("step") > 1), F.element_at("times", F.col("step")) - F.element_at("times", F.col("step") - 1)
    )
    bounds = F.array(*[F.lit(b).cast("long") for b in FUNNEL_TIME_BOUNDS_MS])
    bucket = F.when(F.col("_took").isNotNull(), F.size(F.filter(bounds, lambda b: b <= F.col("_took"))))
    histogram = F.array(*[F.count_if(bucket == i) for i in range(len(FUNNEL_TIME_BOUNDS_MS) + 1)])
    return (
        per_step.withColumn("_reached", reached)
        .withColumn("_took", took)
        .groupBy("site_id", "day", "funnel_id", "step")
        .agg(
            F.count_if("_reached").alias("visitors"),
            F.median("_took").cast("double").alias("median_ms"),
            histogram.alias("times_ms"),
        )
        .select("site_id", "day", "funnel_id", F.col("step").cast("int"), "visitors", "median_ms", "times_ms")
    )
