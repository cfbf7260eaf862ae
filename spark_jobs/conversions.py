"""The rollup's breakdowns of custom events, their properties, goals (and where their converting
visitors came from) and engaged time: pure DataFrame → DataFrame functions, like
:mod:`spark_jobs.transforms` (which wires them into :func:`spark_jobs.transforms.rollup`).

Every input is localized, deduplicated *human* events of the days rolled up (all types): bots
never count here. Each output has the breakdowns' key columns ``site_id``, ``day``,
``dimension``, ``value`` and ``pageviews`` (0 where page views mean nothing), ``visitors``
(distinct non-null ``visitor_id`` of the counted events: never to be summed across days),
plus the columns its function names; :func:`spark_jobs.transforms.rollup` unions them with
the page-view breakdowns, null in the columns a dimension does not have.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from footfall.goals import PAGE, GoalSpec
from footfall.revenue import DECIMALS, MAX_AMOUNT, UNIT
from footfall.vocabulary import (
    ENGAGEMENT,
    EVENT_PROP_VALUES,
    GOAL_BASE_PREFIX,
    GOAL_REVENUE,
    GOAL_REVENUE_SOURCE_PREFIX,
    GOAL_SOURCE_DIMENSIONS,
    GOAL_SOURCE_PREFIX,
    NON_CUSTOM_TYPES,
    PROP_SEPARATOR,
    VALUE_OTHER,
)
from spark_jobs.columns import engaged_ms, pageview_key, props_map, ref_label, scroll_depth, visitor_keys

GOAL_DDL = "site_id STRING, day STRING, goal_id STRING, name STRING, _paid BOOLEAN"


def _custom(events: DataFrame) -> DataFrame:
    return events.where(~F.col("type").isin(*NON_CUSTOM_TYPES))


def _counted(rows: DataFrame, keys: Sequence[str], visitor: Sequence[str]) -> DataFrame:
    """``events`` (rows) and ``visitors`` (distinct non-null ``visitor_id``) per ``keys``: counted per visitor
    (``visitor``: :func:`spark_jobs.columns.visitor_keys`) first, so rows partitioned by visitor need no
    shuffle for the distinct count."""
    return (
        rows.groupBy(*keys, *visitor)
        .agg(F.count("*").alias("events"))
        .groupBy(*keys)
        .agg(F.sum("events").alias("events"), F.count("visitor_id").alias("visitors"))
    )


def _keyed(rows: DataFrame, dimension: str, value: Column, *columns: str) -> DataFrame:
    """``rows`` as breakdown rows of ``dimension``: the key columns, ``pageviews`` 0, ``columns``."""
    key = ["site_id", "day", F.lit(dimension).alias("dimension"), value.alias("value")]
    return rows.select(*key, F.lit(0).cast("long").alias("pageviews"), *columns)


def event_breakdowns(events: DataFrame) -> DataFrame:
    """Custom events (types not in NON_CUSTOM_TYPES) per name: dimension ``event``, ``value`` the
    name. Output: the key columns, ``pageviews`` (0), ``visitors``, ``events`` (LONG)."""
    counted = _counted(_custom(events), ["site_id", "day", "type"], visitor_keys(events))
    return _keyed(counted, "event", F.col("type"), "visitors", "events")


def event_prop_breakdowns(events: DataFrame, top: int = EVENT_PROP_VALUES) -> DataFrame:
    """Custom events per (name, property, value text): dimension ``event_prop``.

    A property's text is :func:`footfall.goals.prop_text` of its JSON value (null is "").
    Per (site, day, event, property) the ``top`` texts with the most events (ties: text
    ascending) are kept; the others count together as :data:`VALUE_OTHER`, their visitors
    distinct over all of them (a real value spelled ``(other)`` counts in that row too).
    ``value`` is ``event + PROP_SEPARATOR + prop + PROP_SEPARATOR + text``.

    Output: the key columns, ``pageviews`` (0), ``visitors``, ``events`` (LONG), ``event``,
    ``prop``, ``prop_value`` (STRING: the text, or ``(other)``).
    """
    keys = ["site_id", "day", "event", "prop"]
    visitor = visitor_keys(events)
    pairs = _custom(events).select(
        "site_id", "day", *visitor, F.col("type").alias("event"), F.explode(props_map()).alias("prop", "_text")
    )
    pairs = pairs.withColumn("_text", F.coalesce("_text", F.lit("")))
    ranked = F.row_number().over(Window.partitionBy(*keys).orderBy(F.col("_n").desc(), F.col("_text").asc()))
    labels = (
        pairs.groupBy(*keys, "_text")
        .agg(F.count("*").alias("_n"))
        .select(*keys, "_text", F.when(ranked <= top, F.col("_text")).otherwise(F.lit(VALUE_OTHER)).alias("prop_value"))
    )
    # Visitors of (other) must be distinct over all its texts: relabel the events, then count.
    counted = _counted(pairs.join(labels, [*keys, "_text"]), [*keys, "prop_value"], visitor)
    value = F.concat("event", F.lit(PROP_SEPARATOR), "prop", F.lit(PROP_SEPARATOR), "prop_value")
    return _keyed(counted, "event_prop", value, "visitors", "events", "event", "prop", "prop_value")


def _goal_condition(spec: GoalSpec, props: Column) -> Column:
    """Whether an event reaches ``spec``, as :meth:`GoalSpec.matches` decides it."""
    if spec.kind == PAGE:
        return (F.col("type") == "pageview") & F.coalesce(F.col("path").rlike(spec.regex), F.lit(False))
    reached = F.col("type") == spec.event
    if spec.prop:
        text = F.coalesce(props[spec.prop], F.lit(""))
        reached &= F.coalesce(F.map_contains_key(props, spec.prop) & (text == spec.value), F.lit(False))
    return reached


# footfall.revenue's AMOUNT_TEXT and CURRENCY_TEXT as whole-text Java patterns ("$" would also
# match before a final newline; see footfall.goals._END).
_AMOUNT = r"(?s)^[0-9]{1,10}(\.[0-9]{1,20})?(?!.)"
_CURRENCY = r"(?s)^[A-Za-z]{3}(?!.)"


def _revenue(spec: GoalSpec, props: Column) -> tuple[Column, Column]:
    """``(currency, units)`` of an event reaching revenue goal ``spec``, as
    :func:`footfall.revenue.revenue_of` reads them: both null when the conversion has no valid revenue."""
    text = props[spec.revenue_prop]
    # DECIMAL(30, 20) holds every text _AMOUNT matches exactly; bround rounds half to even.
    amount = F.bround(text.cast("decimal(30,20)"), DECIMALS)
    valid = F.coalesce(text.rlike(_AMOUNT) & (amount <= F.lit(MAX_AMOUNT)), F.lit(False))
    if spec.currency:
        code = F.lit(spec.currency)
    else:
        named = props[spec.currency_prop]
        code = F.when(F.coalesce(named.rlike(_CURRENCY), F.lit(False)), F.upper(named))
    paid = valid & code.isNotNull()
    return F.when(paid, code), F.when(paid, (amount * F.lit(UNIT)).cast("long"))


def _goal_hits(events: DataFrame, goals: Mapping[str, Sequence[GoalSpec]]) -> DataFrame | None:
    """One row per (event, goal it reaches): ``site_id``, ``day``, ``visitor_id``, ``goal_id``,
    ``paid`` (whether the goal counts revenue), ``currency`` and ``units`` (its revenue, null when the
    goal counts none or the event has no valid revenue); None when no site has a goal. Conditions
    are literals, chosen per site, so each event is tested against its own site's goals only and
    every pattern is compiled once."""
    props = props_map()
    reached: Column | None = None
    none_text, none_units = F.lit(None).cast("string"), F.lit(None).cast("long")
    for site, specs in sorted(goals.items()):
        if not specs:
            continue
        hits = []
        for g in specs:
            currency, units = _revenue(g, props) if g.has_revenue else (none_text, none_units)
            hit = F.struct(F.lit(g.goal_id).alias("goal_id"), F.lit(g.has_revenue).alias("paid"),
                           currency.alias("currency"), units.alias("units"))  # fmt: skip
            hits.append(F.when(_goal_condition(g, props), hit))
        on_site = F.col("site_id") == F.lit(site)
        reached = F.when(on_site, F.array(*hits)) if reached is None else reached.when(on_site, F.array(*hits))
    if reached is None:
        return None
    return (
        events.where(F.col("site_id").isin(*goals))
        .select("site_id", "day", *visitor_keys(events), F.explode(F.array_compact(reached)).alias("_hit"))
        .select("*", "_hit.*")
        .drop("_hit")
    )


def goal_breakdowns(events: DataFrame, goals: Mapping[str, Sequence[GoalSpec]], days: Iterable[str]) -> DataFrame:
    """Conversions per goal: dimension ``goal``, ``value`` the goal's id.

    ``goals``: each site's goal definitions (sites without any are left out). Every goal of a
    site gets a row for every one of ``days``, zeros when nothing reached it, so a day rolled up
    with the goal defined is told apart from one rolled up before it was. A goal id given twice
    for one site is an error.

    Output: the key columns, ``pageviews`` (0), ``visitors`` (unique conversions), ``events``
    (LONG: total conversions), ``name`` (STRING: the goal's name), ``no_revenue`` (LONG: conversions
    without valid revenue; null unless the goal counts revenue); and per revenue goal and currency
    a row of dimension ``goal_revenue``, ``value`` goal id + PROP_SEPARATOR + currency, with
    ``events`` (conversions with revenue in it), ``visitors`` (their distinct visitors), ``revenue``
    (LONG: the sum of their amounts in units of :mod:`footfall.revenue`), ``goal_id``, ``currency``.
    """
    days = sorted(set(days))
    spark = events.sparkSession
    defined = [(site, day, g.goal_id, g.name, g.has_revenue) for site, specs in sorted(goals.items()) for g in specs
               for day in days]  # fmt: skip
    for site, specs in goals.items():
        ids = [g.goal_id for g in specs]
        if len(ids) != len(set(ids)):
            raise ValueError(f"goals of site {site!r}: a goal_id is given twice")
    zeros = spark.createDataFrame(defined, GOAL_DDL)
    hits = _goal_hits(events, goals)
    visitor = visitor_keys(events)
    if hits is None:
        counts = spark.createDataFrame(
            [], "site_id STRING, day STRING, goal_id STRING, events LONG, visitors LONG, _unpaid LONG"
        )
        revenue = spark.createDataFrame(
            [], "site_id STRING, day STRING, goal_id STRING, currency STRING, events LONG, visitors LONG, revenue LONG"
        )
    else:
        unpaid = F.count(F.when(F.col("paid") & F.col("units").isNull(), 1))
        counts = (
            hits.groupBy("site_id", "day", "goal_id", *visitor)
            .agg(F.count("*").alias("events"), unpaid.alias("_unpaid"))
            .groupBy("site_id", "day", "goal_id")
            .agg(F.sum("events").alias("events"), F.count("visitor_id").alias("visitors"),
                 F.sum("_unpaid").alias("_unpaid"))
        )  # fmt: skip
        keys = ["site_id", "day", "goal_id", "currency"]
        revenue = (
            hits.where(F.col("units").isNotNull())
            .groupBy(*keys, *visitor)
            .agg(F.count("*").alias("events"), F.sum("units").alias("revenue"))
            .groupBy(*keys)
            .agg(F.sum("events").alias("events"), F.count("visitor_id").alias("visitors"),
                 F.sum("revenue").cast("long").alias("revenue"))
        )  # fmt: skip
    joined = zeros.join(counts, ["site_id", "day", "goal_id"], "left").fillna(0, subset=["events", "visitors"])
    joined = joined.withColumn(
        "no_revenue", F.when(F.col("_paid"), F.coalesce(F.col("_unpaid"), F.lit(0))).cast("long")
    )
    value = F.concat("goal_id", F.lit(PROP_SEPARATOR), "currency")
    return _keyed(joined, "goal", F.col("goal_id"), "visitors", "events", "name", "no_revenue").unionByName(
        _keyed(revenue, GOAL_REVENUE, value, "visitors", "events", "revenue", "goal_id", "currency"),
        allowMissingColumns=True,
    )


# The session column each goal source dimension takes its value from (the first page view's).
_SESSION_COLUMNS: Mapping[str, str] = {
    "ref": "entry_ref_domain",
    "ref_type": "entry_ref_type",
    "utm_source": "entry_utm_source",
    "utm_medium": "entry_utm_medium",
    "utm_campaign": "entry_utm_campaign",
    "entry_page": "entry_page",
    "country": "entry_country",
    "browser": "entry_browser",
    "os": "entry_os",
    "device": "entry_device",
}
assert tuple(_SESSION_COLUMNS) == GOAL_SOURCE_DIMENSIONS, "one session column per goal source dimension"
GOAL_SOURCE_DDL = (
    "site_id STRING, day STRING, dimension STRING, value STRING, pageviews BIGINT, visitors BIGINT, "
    "events BIGINT, goal_id STRING"
)


def goal_source_breakdowns(
    events: DataFrame, sessions: DataFrame, goals: Mapping[str, Sequence[GoalSpec]]
) -> DataFrame:
    """Where a goal's converting visitors came from: each visitor-day attributed to its first session.

    ``events``: as for :func:`goal_breakdowns` (human events of the days); ``sessions``: those of
    :func:`spark_jobs.transforms.sessionize` that start on the days. A visitor's first session of a
    day is the one starting first that day (ties: lowest ``session_id``); the visitor-day takes its
    values for every dimension of :data:`footfall.vocabulary.GOAL_SOURCE_DIMENSIONS` (a null value
    attributes it to nothing in that dimension). Every conversion of the visitor that day counts
    there, also one before their first page view, and a visitor converting on a day without a
    session starting that day (custom events only, or only the tail of a session begun the day
    before) is attributed to nothing. Events and sessions without a ``visitor_id`` cannot be
    linked to each other and are left out. Only sites with goals get rows.

    Output (:data:`GOAL_SOURCE_DDL`), per site and day:

    * dimension ``goal_src:<dim>``, ``value`` = goal id + PROP_SEPARATOR + the dimension's value,
      ``goal_id``: ``visitors`` (converting visitors attributed to the value), ``events`` (their
      conversions of the goal that day);
    * dimension ``goal_base:<dim>``, ``value`` the dimension's value, once per dimension whatever
      the goals: ``visitors`` attributed to the value (the conversion rate's denominator);
      ``events`` and ``goal_id`` null;
    * for revenue goals, dimension ``goal_revsrc:<dim>``, ``value`` goal id + PROP_SEPARATOR +
      currency + PROP_SEPARATOR + the dimension's value, ``goal_id``, ``currency``: ``visitors``
      (converting visitors attributed to the value with revenue in the currency), ``events``
      (their conversions with such revenue), ``revenue`` (LONG: the sum of those amounts, in units).

    ``pageviews`` is 0.
    """
    spark = events.sparkSession
    hits = _goal_hits(events, goals)
    if hits is None:
        return spark.createDataFrame([], f"{GOAL_SOURCE_DDL}, currency STRING, revenue BIGINT")
    with_goals = [site for site, specs in goals.items() if specs]
    # _alone is "" for every row with a visitor: a key that keeps rows partitioned by visitor from a shuffle.
    alone = ["_alone"] if "_alone" in sessions.columns and "_alone" in events.columns else []
    visitor = ["site_id", "day", "visitor_id", *alone]
    first = Window.partitionBy(*visitor).orderBy("start_ts", "session_id")
    pairs = F.array(*[F.struct(F.lit(dim).alias("dim"), F.col(column).alias("v")) for dim, column in
                      _SESSION_COLUMNS.items()])  # fmt: skip
    attributed = (
        sessions.where(F.col("visitor_id").isNotNull() & F.col("site_id").isin(*with_goals))
        .withColumn("_n", F.row_number().over(first))
        .where(F.col("_n") == 1)
        .select(*visitor, F.explode(pairs).alias("_a"))
        .select(*visitor, F.col("_a.dim").alias("_dim"), F.col("_a.v").alias("_value"))
        .where(F.col("_value").isNotNull())
    )
    # One row per visitor-day and value, so a count is a count of distinct visitors.
    base = attributed.groupBy("site_id", "day", "_dim", "_value").agg(F.count("*").alias("visitors"))
    converting = (
        hits.where(F.col("visitor_id").isNotNull()).groupBy(*visitor, "goal_id").agg(F.count("*").alias("_conversions"))
    )
    sources = (
        attributed.join(converting, visitor)
        .groupBy("site_id", "day", "_dim", "_value", "goal_id")
        .agg(F.count("*").alias("visitors"), F.sum("_conversions").cast("long").alias("events"))
    )
    paying = (
        hits.where(F.col("visitor_id").isNotNull() & F.col("units").isNotNull())
        .groupBy(*visitor, "goal_id", "currency")
        .agg(F.count("*").alias("_conversions"), F.sum("units").alias("_units"))
    )
    revenue = (
        attributed.join(paying, visitor)
        .groupBy("site_id", "day", "_dim", "_value", "goal_id", "currency")
        .agg(F.count("*").alias("visitors"), F.sum("_conversions").cast("long").alias("events"),
             F.sum("_units").cast("long").alias("revenue"))
    )  # fmt: skip
    zero = F.lit(0).cast("long").alias("pageviews")
    revenue_rows = revenue.select(
        "site_id", "day", F.concat(F.lit(GOAL_REVENUE_SOURCE_PREFIX), "_dim").alias("dimension"),
        F.concat_ws(PROP_SEPARATOR, "goal_id", "currency", "_value").alias("value"), zero, "visitors", "events",
        "goal_id", "currency", "revenue",
    )  # fmt: skip
    return sources.select(
        "site_id", "day", F.concat(F.lit(GOAL_SOURCE_PREFIX), "_dim").alias("dimension"),
        F.concat("goal_id", F.lit(PROP_SEPARATOR), "_value").alias("value"), zero, "visitors", "events", "goal_id",
    ).unionByName(
        base.select(
            "site_id", "day", F.concat(F.lit(GOAL_BASE_PREFIX), "_dim").alias("dimension"),
            F.col("_value").alias("value"), zero, "visitors", F.lit(None).cast("long").alias("events"),
            F.lit(None).cast("string").alias("goal_id"),
        )
    ).unionByName(revenue_rows, allowMissingColumns=True)  # fmt: skip


def engagement_breakdowns(events: DataFrame) -> DataFrame:
    """Engaged time and scroll depth of the engagement reports (type ENGAGEMENT), per page
    (dimension ``page``, the report's path; reports without a path are left out) and per
    referrer label (dimension ``ref``, the report's own: the tracker sends its page view's).

    A report's engaged time is capped at MAX_ENGAGED_MS (missing or negative: 0). A page view's
    scroll depth is the greatest ``scroll_depth`` of its reports (by ``pageview_id``; a report
    without one is a page view of its own); page views whose reports carry none have no depth.

    Output per ``(site_id, day, dimension, value)``: ``engaged_ms`` (LONG); for ``page`` also
    ``engagements`` (LONG: reports), ``scroll_views`` (LONG: page views with a depth) and
    ``scroll_sum`` (LONG: the sum of their depths), null for ``ref``.
    """
    props = props_map()
    reports = events.where(F.col("type") == ENGAGEMENT).select(
        "site_id", "day", "path", ref_label().alias("ref"), engaged_ms(props).alias("_ms"),
        scroll_depth(props).alias("_depth"), pageview_key(props).alias("_pageview"),
    )  # fmt: skip
    per_view = (
        reports.where(F.col("path").isNotNull())
        .groupBy("site_id", "day", "path", "_pageview")
        .agg(F.sum("_ms").alias("_ms"), F.count("*").alias("_n"), F.max("_depth").alias("_depth"))
    )
    pages = per_view.groupBy("site_id", "day", F.col("path").alias("value")).agg(
        F.sum("_ms").cast("long").alias("engaged_ms"),
        F.sum("_n").cast("long").alias("engagements"),
        F.count("_depth").alias("scroll_views"),
        F.coalesce(F.sum("_depth"), F.lit(0)).cast("long").alias("scroll_sum"),
    )
    refs = reports.groupBy("site_id", "day", F.col("ref").alias("value")).agg(
        F.sum("_ms").cast("long").alias("engaged_ms")
    )
    return pages.withColumn("dimension", F.lit("page")).unionByName(
        refs.withColumn("dimension", F.lit("ref")), allowMissingColumns=True
    )


def with_engagement(breakdowns: DataFrame, engagement: DataFrame) -> DataFrame:
    """The page-view ``breakdowns`` (:func:`spark_jobs.transforms.breakdowns`) with the
    ``engagement`` of :func:`engagement_breakdowns` joined on.

    ``page`` rows gain ``engaged_ms``, ``engagements``, ``scroll_views``, ``scroll_sum`` and
    ``ref`` rows ``engaged_ms`` (0 without reports; null for other dimensions); a page or
    referrer with reports but no page view that day gets a row of its own, with ``pageviews``
    and ``visitors`` 0. Output: the input's columns plus those four.
    """
    keys = ["site_id", "day", "dimension", "value"]
    joined = breakdowns.join(engagement, keys, "full")
    is_page, is_ref = F.col("dimension") == "page", F.col("dimension") == "ref"
    page_or_ref = is_page | is_ref
    return joined.select(
        *[F.col(c) for c in breakdowns.columns if c not in {*keys, "pageviews", "visitors"}],
        *keys,
        F.coalesce("pageviews", F.lit(0)).alias("pageviews"),
        F.coalesce("visitors", F.lit(0)).alias("visitors"),
        F.when(page_or_ref, F.coalesce("engaged_ms", F.lit(0))).cast("long").alias("engaged_ms"),
        *[F.when(is_page, F.coalesce(c, F.lit(0))).cast("long").alias(c) for c in ("engagements", "scroll_views")],
        F.when(is_page, F.coalesce("scroll_sum", F.lit(0))).cast("long").alias("scroll_sum"),
    ).select(*breakdowns.columns, "engaged_ms", "engagements", "scroll_views", "scroll_sum")
