"""Rollup benchmark: the nightly Spark rollup (``local[2]``) against DuckDB on the same generated archive, their
``page``, ``ref``, ``refpage``, ``event``, ``event_prop`` and ``goal`` breakdowns (engaged time and scroll depth
included) and each day's journey sessions compared row by row; no services needed. Goals (issue 43): Spark
<= 2 x DuckDB's wall time at 10M rows (CPU <= 2.5 x), <= 3 x at 1M. Usage and figures: bench/README.md."""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import importlib.metadata
import json
import os
import re
import shutil
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from archive.schema import ARROW_SCHEMA, EVENTS_DIR
from bench.harness import OUT, columns, cpu_seconds, machine, run_main
from footfall.goals import GoalSpec
from footfall.journeys import MAX_STEPS, STORED_STEPS_CAP
from footfall.revenue import MAX_AMOUNT, UNIT
from footfall.vocabulary import (
    EVENT_PROP_VALUES,
    GOAL_BASE_PREFIX,
    GOAL_REVENUE,
    GOAL_REVENUE_SOURCE_PREFIX,
    GOAL_SOURCE_DIMENSIONS,
    GOAL_SOURCE_PREFIX,
    MAX_ENGAGED_MS,
    PROP_SEPARATOR,
    REF_DIRECT,
    REF_UNKNOWN,
    REFPAGE_SEPARATOR,
    SESSION_GAP_MINUTES,
    VALUE_OTHER,
)
from spark_jobs.transforms import DEFAULT_TZ

CACHE = Path.home() / ".cache" / "footfall" / "bench"
GEN_VERSION = 3  # bump when the generator changes: the cache key includes it
# Spark / DuckDB wall time at 10M rows and more (CPU time: GOAL_CPU_RATIO), and below it (a larger share is fixed cost).
GOAL_RATIO, GOAL_CPU_RATIO, GOAL_RATIO_SMALL = 2.0, 2.5, 3.0


def goal_ratio(events: int) -> float:
    return GOAL_RATIO if events >= 10_000_000 else GOAL_RATIO_SMALL


# The goal filter's rows: converting visitors per goal and value, every visitor per value (first session of the day).
_GOAL_ROW_PREFIXES = (GOAL_SOURCE_PREFIX, GOAL_BASE_PREFIX, GOAL_REVENUE_SOURCE_PREFIX)
GOAL_SOURCE_ROWS = tuple(p + dim for p in _GOAL_ROW_PREFIXES for dim in GOAL_SOURCE_DIMENSIONS)
DIMENSIONS = ("page", "ref", "refpage", "event", "event_prop", "goal", GOAL_REVENUE, *GOAL_SOURCE_ROWS)
# The archive column of each goal source dimension's value in a session's first page view (ref: the label, computed).
SOURCE_COLUMNS = {"ref": "ref", "ref_type": "ref_type", "utm_source": "utm_source", "utm_medium": "utm_medium",
                  "utm_campaign": "utm_campaign", "entry_page": "path", "country": "country", "browser": "ua_browser",
                  "os": "ua_os", "device": "ua_device"}  # fmt: skip
assert tuple(SOURCE_COLUMNS) == GOAL_SOURCE_DIMENSIONS
KEYS = ("site_id", "day", "dimension", "value")
# Journey sessions (spark_jobs.journeys) compared as rows of this dimension: the value is the visitor's number, "cut"
# or "" and the kept steps, joined by REFPAGE_SEPARATOR; ``events`` holds the sessions.
JOURNEY = "journey"
# Compared besides the keys; null where a dimension does not have the figure.
FIGURES = ("pageviews", "visitors", "events", "engaged_ms", "engagements", "scroll_views", "scroll_sum", "revenue",
           "no_revenue")  # fmt: skip

FIRST_DAY = dt.date(2025, 10, 26)  # EU clocks go back this day, US clocks on 2025-11-02
LOCAL_DAYS = 8
DUP_RATE = 0.05  # share of archive rows that are re-delivered copies
BOT_RATE = 0.04
ARCHIVE_SQL = Path(__file__).with_name("rollup_archive.sql").read_text()  # one site's local day

# (site_id, host, time zone or None: rolled up in UTC, share of the traffic, distinct pages,
# path prefix of page k)
SITES = (
    ("shop", "www.shop.example", "America/New_York", 0.35, 3000, "/products/item-"),
    ("blog", "blog.example.org", "Europe/Berlin", 0.25, 1500, "/blog/2025/post-"),
    ("docs", "docs.example.dev", "Asia/Kolkata", 0.20, 800, "/docs/v2/page-"),
    ("news", "news.example.com.au", "Australia/Sydney", 0.12, 5000, "/story/"),
    ("api", "api.example.net", None, 0.08, 200, "/v1/resource-"),
)

# (share, ref_domain SQL, ref_type, referrer URL SQL); what is left over is direct traffic.
# ``tail`` is a long tail of 2,000 small sites, skewed; ``host`` the site's own (internal).
_TAIL = "'blog' || floor(2000 * pow(u(g, 31), 2))::INT || '.example.net'"
REFERRERS = (
    (0.20, "'www.google.com'", "search", "'https://www.google.com/'"),
    (0.03, "'www.bing.com'", "search", "'https://www.bing.com/'"),
    (0.02, "'duckduckgo.com'", "search", "'https://duckduckgo.com/'"),
    (0.02, "'t.co'", "social", "'https://t.co/' || substr(md5(g::VARCHAR), 1, 10)"),
    (0.03, "'www.reddit.com'", "social", "'https://www.reddit.com/r/sub' || floor(40 * u(g, 32))::INT || '/'"),
    (0.02, "'news.ycombinator.com'", "social", "'https://news.ycombinator.com/item?id=' || floor(90 * u(g, 32))::INT"),
    (0.01, "'www.linkedin.com'", "social", "'https://www.linkedin.com/'"),
    (0.005, "'mail.google.com'", "email", "'https://mail.google.com/'"),
    (0.10, "host", "internal", "'https://' || host || '/'"),
    (0.07, _TAIL, "other", "'https://' || ref_domain || '/p/' || floor(20 * u(g, 32))::INT"),
    (0.003, "NULL", "other", "'android-app://com.example.unknown/'"),  # unparseable: no domain
)


def site_goals() -> dict[str, list[GoalSpec]]:
    """Five goals per site: a page pattern, an event with a property, an event by name, and two revenue goals
    (the currency from a property, and a fixed one)."""
    return {
        site_id: [
            GoalSpec(f"{site_id}-1", "page", name="Pages 1*", path=f"{prefix}1*"),
            GoalSpec(f"{site_id}-2", "event", name="Pro signup", event="signup", prop="plan", value="pro"),
            GoalSpec(f"{site_id}-3", "event", name="Download", event="download"),
            GoalSpec(
                f"{site_id}-4",
                "event",
                name="Paid signup",
                event="signup",
                revenue_prop="amount",
                currency_prop="currency",
            ),
            GoalSpec(f"{site_id}-5", "event", name="Paid click", event="click", revenue_prop="qty", currency="EUR"),
        ]
        for site_id, _, _, _, _, prefix in SITES
    }


def re2_regex(pattern: str) -> str:
    """A page goal's pattern as DuckDB's RE2 reads it, matching what ``GoalSpec.regex`` matches. RE2 has
    neither the atomic groups nor the lookahead that regex uses against Java's backtracking (RE2 does not
    backtrack), and its ``$`` is the end of the text."""
    return "(?s)^" + ".*".join(re.escape(part) for part in pattern.split("*")) + "$"


def _allocate(total: int, weights: Sequence[float]) -> list[int]:
    """``total`` split in proportion to ``weights``, summing exactly (largest remainder)."""
    raw = [w * (total / sum(weights)) for w in weights]
    counts = [int(x) for x in raw]
    for i in sorted(range(len(raw)), key=lambda i: counts[i] - raw[i])[: total - sum(counts)]:
        counts[i] += 1
    return counts


def _chunk_sql(site: tuple, day: dt.date, first_g: int, n: int, n_dup: int, visitors: int) -> str:
    """Rows of one site and local day: ``n`` distinct events plus ``n_dup`` re-delivered copies."""
    edges = [f"WHEN r < {edge:.6f} THEN" for edge in accumulate(share for share, *_ in REFERRERS)]
    cols = zip(*((dom, f"'{typ}'", ref) for _, dom, typ, ref in REFERRERS), strict=True)  # CASE over the uniform r
    dom, typ, ref = (" ".join(f"{edge} {value}" for edge, value in zip(edges, col, strict=True)) for col in cols)
    site_id, host, tz, _, pages, prefix = site
    return ARCHIVE_SQL.format(
        site_id=site_id, host=host, tz=tz or DEFAULT_TZ, pages=pages, prefix=prefix, day=day, first_g=first_g, n=n,
        dup_end=first_g + n_dup, visitors=visitors, bot_rate=BOT_RATE, bot_edge=BOT_RATE + 0.001,
        ref_domain=f"CASE {dom} ELSE NULL END", ref_type=f"CASE {typ} ELSE 'direct' END",
        referrer=f"CASE {ref} ELSE NULL END",
    )  # fmt: skip


def _arrow(result: Any) -> pa.Table:
    """A DuckDB result as one Arrow table (``fetch_arrow_table`` is deprecated from DuckDB 1.4)."""
    fetch = getattr(result, "to_arrow_table", None) or result.fetch_arrow_table
    return fetch()


def generate(root: Path, events: int, seed: int) -> dict[str, Any]:
    """Write the archive under ``root`` (atomically: a temporary directory renamed at the end)."""
    started = time.monotonic()
    distinct = round(events / (1 + DUP_RATE / (1 - DUP_RATE)))  # duplicates = DUP_RATE of all rows
    days = [FIRST_DAY + dt.timedelta(days=i) for i in range(LOCAL_DAYS)]
    chunks = [(s, d) for s in SITES for d in days]
    per_chunk = _allocate(distinct, [s[3] * (0.8 if d.weekday() >= 5 else 1.0) for s, d in chunks])  # quieter weekends
    dups, tmp = _allocate(events - distinct, per_chunk), root.with_name(root.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute(f"CREATE MACRO u(g, k) AS (hash(g, k, {seed}) >> 11)::DOUBLE / 9007199254740992.0")
    files = rows = first_g = 0
    for number, ((site, day), n, n_dup) in enumerate(zip(chunks, per_chunk, dups, strict=True)):
        table = _arrow(con.sql(_chunk_sql(site, day, first_g, n, n_dup, max(1, n // 3))))
        first_g += n
        keys = pc.binary_join_element_wise(table["date"], table["hour"], table["batch"], "/")
        counts = pc.value_counts(keys)  # in order of first appearance, which is sorted order
        data, offset = table.select(ARROW_SCHEMA.names).cast(ARROW_SCHEMA), 0
        for item in counts:
            (date, hour, batch), count = item["values"].as_py().split("/"), item["counts"].as_py()
            where = tmp / EVENTS_DIR / f"site_id={site[0]}" / f"date={date}" / f"hour={hour}"
            where.mkdir(parents=True, exist_ok=True)
            pq.write_table(data.slice(offset, count), where / f"part-{number:03d}-{batch}.parquet", compression="zstd")
            offset, files = offset + count, files + 1
        rows += len(table)
        print(f"\r  generating: {rows:,}/{events:,} rows, {files:,} files", end="", flush=True)
    print()
    con.close()
    assert rows == events, (rows, events)
    meta = {"events": events, "distinct_events": distinct, "duplicates": events - distinct, "seed": seed,
            "generator_version": GEN_VERSION, "files": files,
            "bytes": sum(p.stat().st_size for p in tmp.rglob("*.parquet")), "sites": {s[0]: s[2] for s in SITES},
            "local_days": [d.isoformat() for d in days],
            "generated_s": round(time.monotonic() - started, 1)}  # fmt: skip
    (tmp / "archive.json").write_text(json.dumps(meta, indent=2) + "\n")
    shutil.rmtree(root, ignore_errors=True)
    tmp.rename(root)
    return meta


def ensure_archive(events: int, seed: int, regenerate: bool) -> tuple[Path, dict[str, Any]]:
    """The cached archive's root and metadata, generated first when missing."""
    root = CACHE / f"rollup-n{events}-s{seed}-g{GEN_VERSION}"
    if regenerate:
        shutil.rmtree(root, ignore_errors=True)
    if not (root / "archive.json").exists():
        print(f"Generating {events:,} archive rows under {root} (once; cached)")
        generate(root, events, seed)
    return root, json.loads((root / "archive.json").read_text())


def rollup_days(meta: dict[str, Any]) -> list[str]:
    """Every local day the archive can touch: its local days and one either side."""
    first = dt.date.fromisoformat(meta["local_days"][0]) - dt.timedelta(days=1)  # the local days are consecutive
    return [(first + dt.timedelta(days=i)).isoformat() for i in range(len(meta["local_days"]) + 2)]


@dataclass
class Run:
    table: pa.Table
    wall_s: float
    cpu_s: float  # the engine's own CPU: the JVM's plus this process's for Spark, this process's for DuckDB
    spark_jobs: dict[str, int] | None = None  # Spark only: jobs, stages and tasks of the run (spark_counts)


def spark_counts(spark: Any, group: str) -> dict[str, int]:
    """The Spark jobs of job group ``group``, their stages (each counted once; ``stages_run``: those that ran
    tasks, the others were skipped as their shuffle output existed) and the tasks those ran, from the
    SparkContext's status tracker (no listener, nothing in the job's code)."""
    tracker = spark.sparkContext.statusTracker()
    jobs = [tracker.getJobInfo(job) for job in tracker.getJobIdsForGroup(group)]
    stage_ids = {stage for job in jobs if job is not None for stage in job.stageIds}
    stages = [tracker.getStageInfo(stage) for stage in stage_ids]
    ran = [s for s in stages if s is not None and s.numCompletedTasks > 0]
    return {"jobs": len(jobs), "stages": len(stage_ids), "stages_run": len(ran),
            "tasks": sum(s.numCompletedTasks for s in ran)}  # fmt: skip


def start_spark(driver_memory: str, input_bytes: int) -> Any:
    from pyspark.sql import SparkSession

    from archive.spark_conf import jvm_conf, jvm_options
    from spark_jobs.rollup import SESSION_CONF

    # As spark-submit starts the job for an archive of ``input_bytes`` and the job its session.
    conf = {"spark.driver.memory": driver_memory, "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
            **SESSION_CONF, **jvm_conf(jvm_options(input_bytes)),
            "spark.sql.execution.arrow.pyspark.enabled": "true"}  # fmt: skip
    spark = SparkSession.builder.master("local[2]").appName("footfall-rollup-bench").config(map=conf).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def run_spark(spark: Any, root: Path, site_tz: dict[str, str | None], days: list[str]) -> Run:
    """The job's read_events and transforms as ``transform_and_load`` runs them (the localized, deduplicated rows
    persisted once, then ``rollup_localized``), its breakdowns of DIMENSIONS as Arrow."""
    from pyspark.sql import functions as F

    from archive.reader import read_events
    from spark_jobs.rollup import persisted, zone_changes
    from spark_jobs.transforms import localized, rollup_localized

    jvm = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    group = f"rollup-bench-{time.monotonic_ns()}"
    spark.sparkContext.setJobGroup(group, "the rollup bench's Spark run")
    cpu, started = cpu_seconds(jvm) + cpu_seconds(), time.monotonic()
    events = read_events(spark, root.as_uri(), sorted(site_tz), days)
    zones = spark.createDataFrame(list(site_tz.items()), "site_id STRING, tz STRING")
    changes = zone_changes(set(site_tz.values()), days)
    local = persisted(localized(events, zones, changes))
    try:
        outputs = rollup_localized(local, days, goals=site_goals())
        breakdowns = outputs["breakdowns"].where(F.col("dimension").isin(*DIMENSIONS)).select(*KEYS, *FIGURES)
        cut = F.when(F.col("truncated"), F.lit("cut")).otherwise(F.lit(""))
        journeys = outputs["journeys"].select(
            "site_id", "day", F.lit(JOURNEY).alias("dimension"),
            F.concat_ws(REFPAGE_SEPARATOR, F.col("visitor").cast("string"), cut, "steps").alias("value"),
            F.lit(0).cast("long").alias("pageviews"), F.lit(0).cast("long").alias("visitors"),
            F.col("sessions").alias("events"), *[F.lit(None).cast("long").alias(f) for f in FIGURES[3:]],
        )  # fmt: skip
        # One collect per output, as the job's collect_rows does.
        table = pa.concat_tables([breakdowns.toArrow(), journeys.toArrow()], promote_options="permissive")
    finally:
        local.unpersist(blocking=True)  # the next round reads the archive again, as the next night's job
    wall, cpu = time.monotonic() - started, cpu_seconds(jvm) + cpu_seconds() - cpu
    spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    return Run(table, wall, cpu, spark_counts(spark, group))


# The breakdowns of spark_jobs.transforms measured here (DIMENSIONS), written from its rules: the referrer label
# as footfall.vocabulary.ref_label gives it; the local day of every row by one ICU time zone conversion per row,
# as Spark does it; refpage NULL when path is NULL, like Spark's concat; custom events, property values (top
# $top per event and property, the rest as (other)), goals and engaged time from the contract (footfall.vocabulary).
# The generator writes only strings and integers into props, whose text both engines read alike.
DUCKDB_SQL = """
WITH archive AS (
    SELECT * FROM read_parquet($files, hive_partitioning = true,
                               hive_types = {'site_id': VARCHAR, 'date': VARCHAR, 'hour': VARCHAR})
    WHERE date IN (SELECT unnest($dates)) AND site_id IN (SELECT unnest($sites))
),
deduped AS (  -- one row per (site_id, event_id): the copy received first
    SELECT * FROM archive
    QUALIFY row_number() OVER (PARTITION BY site_id, event_id
        ORDER BY received_at ASC NULLS LAST, kafka_partition ASC NULLS LAST, kafka_offset ASC NULLS LAST) = 1
),
zones AS (SELECT site_id, min(tz) AS tz FROM site_tz GROUP BY site_id),
humans AS MATERIALIZED (  -- human events of the days on the site's wall clock, with their referrer label
    SELECT * FROM (
        SELECT d.*, CASE WHEN coalesce(d.ref_domain, '') <> '' THEN d.ref_domain
                         WHEN length(trim(d.referrer)) > 0 THEN $unknown ELSE $direct END AS ref,
               CAST(CAST(timezone(coalesce(z.tz, $default_tz), make_timestamptz(d.ts * 1000)) AS DATE) AS VARCHAR)
                   AS day
        FROM deduped d LEFT JOIN zones z ON z.site_id = d.site_id
        WHERE NOT coalesce(d.is_bot, FALSE))
    WHERE day IN (SELECT unnest($days))
),
wanted AS (SELECT * FROM humans WHERE type = 'pageview'),
dimensions AS (
    SELECT site_id, day, 'page' AS dimension, path AS value, visitor_id FROM wanted
    UNION ALL
    SELECT site_id, day, 'ref' AS dimension, ref AS value, visitor_id FROM wanted
    UNION ALL
    SELECT site_id, day, 'refpage' AS dimension, ref || $sep || path AS value, visitor_id FROM wanted
),
viewed AS (
    SELECT site_id, day, dimension, value, count(*) AS pageviews, count(DISTINCT visitor_id) AS visitors
    FROM dimensions WHERE value IS NOT NULL
    GROUP BY site_id, day, dimension, value
),
reports AS (  -- engagement reports: capped engaged ms, clamped depth, their page view
    SELECT site_id, day, path, ref,
        trunc(least(greatest(coalesce(TRY_CAST(json_extract_string(props, '$.engaged_ms') AS DOUBLE), 0), 0),
                    $max_ms))::BIGINT AS ms,
        -- least/greatest skip nulls: clamp only a depth that is there
        CASE WHEN TRY_CAST(json_extract_string(props, '$.scroll_depth') AS DOUBLE) IS NOT NULL THEN
             trunc(least(greatest(TRY_CAST(json_extract_string(props, '$.scroll_depth') AS DOUBLE), 0), 100))::INT
        END AS depth,
        CASE WHEN length(json_extract_string(props, '$.pageview_id')) > 0
             THEN json_extract_string(props, '$.pageview_id') ELSE event_id END AS pageview
    FROM humans WHERE type = 'engagement'
),
per_view AS (
    SELECT site_id, day, path, pageview, sum(ms) AS ms, count(*) AS n, max(depth) AS depth
    FROM reports WHERE path IS NOT NULL GROUP BY ALL
),
engaged AS (
    SELECT site_id, day, 'page' AS dimension, path AS value, sum(ms)::BIGINT AS engaged_ms,
           sum(n)::BIGINT AS engagements, count(depth) AS scroll_views, coalesce(sum(depth), 0)::BIGINT AS scroll_sum
    FROM per_view GROUP BY ALL
    UNION ALL
    SELECT site_id, day, 'ref', ref, sum(ms)::BIGINT, NULL, NULL, NULL FROM reports GROUP BY ALL
),
custom AS (SELECT * FROM humans WHERE type NOT IN ('pageview', 'request', 'engagement')),
pairs AS (
    SELECT site_id, day, visitor_id, type AS event, prop,
           coalesce(json_extract_string(props, '$."' || prop || '"'), '') AS text
    FROM (SELECT *, unnest(json_keys(props)) AS prop FROM custom WHERE props IS NOT NULL)
),
labels AS (
    SELECT site_id, day, event, prop, text,
           CASE WHEN row_number() OVER (PARTITION BY site_id, day, event, prop ORDER BY n DESC, text) <= $top
                THEN text ELSE $other END AS label
    FROM (SELECT site_id, day, event, prop, text, count(*) AS n FROM pairs GROUP BY ALL)
),
props AS (
    SELECT site_id, day, 'event_prop' AS dimension, event || $psep || prop || $psep || label AS value,
           count(*) AS events, count(DISTINCT visitor_id) AS visitors
    FROM pairs JOIN labels USING (site_id, day, event, prop, text) GROUP BY site_id, day, event, prop, label
),
reached AS (
    SELECT h.site_id, h.day, g.goal_id, h.visitor_id FROM humans h JOIN goals g ON g.site_id = h.site_id
    WHERE CASE WHEN g.kind = 'page' THEN h.type = 'pageview' AND coalesce(regexp_matches(h.path, g.regex), FALSE)
               WHEN g.prop = '' THEN h.type = g.event
               ELSE h.type = g.event AND coalesce(json_exists(h.props, '$."' || g.prop || '"')
                    AND coalesce(json_extract_string(h.props, '$."' || g.prop || '"'), '') = g.value, FALSE) END
),
paid AS (  -- revenue goals' conversions: currency and units (footfall.revenue), both null without valid revenue
    SELECT site_id, day, goal_id, visitor_id, CASE WHEN ok THEN code END AS currency,
           CASE WHEN ok THEN units END AS units
    FROM (
        SELECT *, units IS NOT NULL AND units <= $max_amount::BIGINT * $unit AND code IS NOT NULL AS ok
        FROM (
        -- half to even, exactly: DuckDB's round_even goes through a DOUBLE
        SELECT *, (floor(scaled) + CASE WHEN scaled - floor(scaled) > 0.5 THEN 1
                                        WHEN scaled - floor(scaled) < 0.5 THEN 0
                                        ELSE floor(scaled) % 2 END)::BIGINT AS units
        FROM (
            SELECT r.site_id, r.day, r.goal_id, r.visitor_id,
                   CASE WHEN g.currency <> '' THEN g.currency
                        WHEN regexp_full_match(coalesce(c, ''), '[A-Za-z]{3}') THEN upper(c) END AS code,
                   CASE WHEN regexp_full_match(coalesce(a, ''), '[0-9]{1,10}([.][0-9]{1,20})?')
                        THEN CAST(a AS DECIMAL(30, 20)) * $unit END AS scaled
            -- a revenue goal has no property condition: its conversions are the events of its name
            FROM (SELECT h.site_id, h.day, g.goal_id, h.visitor_id,
                         json_extract_string(h.props, '$."' || g.revenue_prop || '"') AS a,
                         CASE WHEN g.currency_prop <> ''
                              THEN json_extract_string(h.props, '$."' || g.currency_prop || '"') END AS c
                  FROM custom h JOIN goals g ON g.site_id = h.site_id AND g.revenue_prop <> '' AND h.type = g.event) r
                 JOIN goals g USING (site_id, goal_id))))
),
unpaid AS (SELECT site_id, day, goal_id, count(*) FILTER (WHERE units IS NULL) AS n FROM paid GROUP BY ALL),
goal_rows AS (
    SELECT g.site_id, d.day, 'goal' AS dimension, g.goal_id AS value, count(r.goal_id) AS events,
           count(DISTINCT r.visitor_id) AS visitors,
           CASE WHEN any_value(g.revenue_prop) <> '' THEN coalesce(any_value(u.n), 0) END AS no_revenue
    FROM goals g CROSS JOIN (SELECT unnest($days) AS day) d
    LEFT JOIN reached r ON r.site_id = g.site_id AND r.day = d.day AND r.goal_id = g.goal_id
    LEFT JOIN unpaid u ON u.site_id = g.site_id AND u.day = d.day AND u.goal_id = g.goal_id
    GROUP BY g.site_id, d.day, g.goal_id
),
revenue_rows AS (
    SELECT site_id, day, $revenue AS dimension, goal_id || $psep || currency AS value, count(*) AS events,
           count(DISTINCT visitor_id) AS visitors, sum(units)::BIGINT AS revenue
    FROM paid WHERE units IS NOT NULL GROUP BY site_id, day, goal_id, currency
),
views AS (  -- human page views of every date read, with a visitor: sessions may begin the evening before
    SELECT d.*, CASE WHEN coalesce(d.ref_domain, '') <> '' THEN d.ref_domain
                     WHEN length(trim(d.referrer)) > 0 THEN $unknown ELSE $direct END AS ref,
           CAST(CAST(timezone(coalesce(z.tz, $default_tz), make_timestamptz(d.ts * 1000)) AS DATE) AS VARCHAR) AS day
    FROM deduped d LEFT JOIN zones z ON z.site_id = d.site_id
    WHERE NOT coalesce(d.is_bot, FALSE) AND d.type = 'pageview' AND d.visitor_id IS NOT NULL
),
starts AS (  -- a session starts with a visitor's page view more than $gap_ms after their previous one
    SELECT * FROM views
    QUALIFY coalesce(ts - lag(ts) OVER (PARTITION BY site_id, visitor_id ORDER BY ts, event_id) > $gap_ms, TRUE)
),
firsts AS (  -- each visitor-day's first session starting that day, by its first page view
    SELECT * FROM starts WHERE day IN (SELECT unnest($days))
    QUALIFY row_number() OVER (PARTITION BY site_id, day, visitor_id ORDER BY ts, event_id) = 1
),
attributed AS (
    SELECT site_id, day, visitor_id, a.dim, a.v AS value
    FROM (SELECT site_id, day, visitor_id, unnest([{SOURCE_STRUCTS}]) AS a FROM firsts)
    WHERE a.v IS NOT NULL
),
converting AS (
    SELECT site_id, day, visitor_id, goal_id, count(*) AS n FROM reached WHERE visitor_id IS NOT NULL GROUP BY ALL
),
sources AS (
    SELECT a.site_id, a.day, $src_prefix || a.dim AS dimension, c.goal_id || $psep || a.value AS value,
           count(*) AS visitors, sum(c.n)::BIGINT AS events
    FROM attributed a JOIN converting c USING (site_id, day, visitor_id) GROUP BY ALL
    UNION ALL
    SELECT site_id, day, $base_prefix || dim, value, count(*), NULL FROM attributed GROUP BY ALL
),
revenue_sources AS (
    SELECT a.site_id, a.day, $revsrc_prefix || a.dim AS dimension,
           p.goal_id || $psep || p.currency || $psep || a.value AS value, count(*) AS visitors,
           sum(p.n)::BIGINT AS events, sum(p.units)::BIGINT AS revenue
    FROM attributed a JOIN (SELECT site_id, day, visitor_id, goal_id, currency, count(*) AS n, sum(units) AS units
                            FROM paid WHERE units IS NOT NULL AND visitor_id IS NOT NULL GROUP BY ALL) p
         USING (site_id, day, visitor_id)
    GROUP BY ALL
),
steps AS (  -- journeys' steps (spark_jobs.journeys): human page views and custom events with a visitor, every date
    SELECT * FROM (
        SELECT d.site_id, d.visitor_id, d.ts, d.event_id,
               CASE WHEN d.type = 'pageview' THEN CASE WHEN starts_with(d.path, '/') THEN d.path END
                    WHEN d.type IN ('request', 'engagement') OR starts_with(d.type, '/') THEN NULL
                    ELSE d.type END AS label,
               CAST(CAST(timezone(coalesce(z.tz, $default_tz), make_timestamptz(d.ts * 1000)) AS DATE) AS VARCHAR)
                   AS day
        FROM deduped d LEFT JOIN zones z ON z.site_id = d.site_id
        WHERE NOT coalesce(d.is_bot, FALSE) AND d.visitor_id IS NOT NULL)
    WHERE label IS NOT NULL
),
step_runs AS (  -- a session starts more than $gap_ms after the visitor's step before; a reload is no step
    SELECT * FROM (
        SELECT *, coalesce(ts - lag(ts) OVER w > $gap_ms, TRUE) AS new_session, lag(label) OVER w AS prev
        FROM steps WINDOW w AS (PARTITION BY site_id, visitor_id ORDER BY ts, event_id))
),
sessions_of AS (
    SELECT *, sum(new_session::INT) OVER (PARTITION BY site_id, visitor_id ORDER BY ts, event_id
                                          ROWS UNBOUNDED PRECEDING) AS session
    FROM step_runs
),
positions AS (
    SELECT *, row_number() OVER (PARTITION BY site_id, visitor_id, session ORDER BY ts, event_id) AS pos
    FROM sessions_of WHERE new_session OR label <> prev
),
journey_sessions AS (  -- each session's steps, and the position of the last step it first reached in the head
    SELECT site_id, visitor_id, first(day ORDER BY pos) AS day, list(label ORDER BY pos) AS all_steps,
           max(CASE WHEN first_time AND pos <= $cap THEN pos END) AS last_new
    FROM (SELECT *, row_number() OVER (PARTITION BY site_id, visitor_id, session, label ORDER BY pos) = 1
                        AS first_time FROM positions)
    GROUP BY site_id, visitor_id, session
),
kept AS (
    SELECT site_id, day, visitor_id, all_steps[1:keep] AS steps, keep < len(all_steps) AS truncated
    FROM (SELECT *, least(len(all_steps), last_new + $depth, $cap) AS keep FROM journey_sessions)
    WHERE day IN (SELECT unnest($days))
),
journeys AS (
    SELECT site_id, day,
           dense_rank() OVER (PARTITION BY site_id, day ORDER BY visitor_id)::VARCHAR || $sep
               || CASE WHEN truncated THEN 'cut' ELSE '' END || $sep || array_to_string(steps, $sep) AS value,
           sessions
    FROM (SELECT site_id, day, visitor_id, steps, truncated, count(*) AS sessions FROM kept GROUP BY ALL)
)
SELECT site_id, day, dimension, value, coalesce(v.pageviews, 0) AS pageviews, coalesce(v.visitors, 0) AS visitors,
       NULL::BIGINT AS events,
       CASE WHEN dimension IN ('page', 'ref') THEN coalesce(e.engaged_ms, 0) END AS engaged_ms,
       CASE WHEN dimension = 'page' THEN coalesce(e.engagements, 0) END AS engagements,
       CASE WHEN dimension = 'page' THEN coalesce(e.scroll_views, 0) END AS scroll_views,
       CASE WHEN dimension = 'page' THEN coalesce(e.scroll_sum, 0) END AS scroll_sum,
       NULL::BIGINT AS revenue, NULL::BIGINT AS no_revenue
FROM viewed v FULL JOIN engaged e USING (site_id, day, dimension, value)
UNION ALL
SELECT site_id, day, 'event', type, 0, count(DISTINCT visitor_id), count(*), NULL, NULL, NULL, NULL, NULL, NULL
FROM custom GROUP BY ALL
UNION ALL
SELECT site_id, day, dimension, value, 0, visitors, events, NULL, NULL, NULL, NULL, NULL, NULL FROM props
UNION ALL
SELECT site_id, day, dimension, value, 0, visitors, events, NULL, NULL, NULL, NULL, NULL, no_revenue FROM goal_rows
UNION ALL
SELECT site_id, day, dimension, value, 0, visitors, events, NULL, NULL, NULL, NULL, revenue, NULL FROM revenue_rows
UNION ALL
SELECT site_id, day, dimension, value, 0, visitors, events, NULL, NULL, NULL, NULL, NULL, NULL FROM sources
UNION ALL
SELECT site_id, day, dimension, value, 0, visitors, events, NULL, NULL, NULL, NULL, revenue, NULL FROM revenue_sources
UNION ALL
SELECT site_id, day, $journey, value, 0, 0, sessions, NULL, NULL, NULL, NULL, NULL, NULL FROM journeys
""".replace("{SOURCE_STRUCTS}", ", ".join(f"{{'dim': '{d}', 'v': {c}}}" for d, c in SOURCE_COLUMNS.items()))


def run_duckdb(root: Path, site_tz: dict[str, str | None], days: list[str], dates: list[str], memory: str) -> Run:
    """The same breakdowns by DuckDB (2 threads): a fresh in-memory database reading the same files."""
    cpu, started = cpu_seconds(), time.monotonic()
    # Row order is never compared (rows are joined on their keys); keeping it costs memory DuckDB's sort-free
    # operators would not need (its guide's first advice when a statement runs out of memory).
    con = duckdb.connect(config={"threads": 2, "memory_limit": memory, "preserve_insertion_order": False})
    try:
        con.execute("SET TimeZone = 'UTC'")
        con.execute("CREATE TABLE site_tz (site_id VARCHAR, tz VARCHAR)")
        con.executemany("INSERT INTO site_tz VALUES (?, ?)", list(site_tz.items()))
        con.execute("CREATE TABLE goals (site_id VARCHAR, goal_id VARCHAR, kind VARCHAR, regex VARCHAR, "
                    "event VARCHAR, prop VARCHAR, value VARCHAR, revenue_prop VARCHAR, currency_prop VARCHAR, "
                    "currency VARCHAR)")  # fmt: skip
        goals = [(site, g.goal_id, g.kind, re2_regex(g.path) if g.kind == "page" else "", g.event, g.prop, g.value,
                  g.revenue_prop, g.currency_prop, g.currency)
                 for site, specs in site_goals().items() for g in specs if site in site_tz]  # fmt: skip
        con.executemany("INSERT INTO goals VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", goals)
        params = {"files": f"{root / EVENTS_DIR}/*/*/*/*.parquet", "dates": dates, "sites": sorted(site_tz),
                  "days": days, "default_tz": DEFAULT_TZ, "direct": REF_DIRECT, "unknown": REF_UNKNOWN,
                  "sep": REFPAGE_SEPARATOR, "psep": PROP_SEPARATOR, "other": VALUE_OTHER, "top": EVENT_PROP_VALUES,
                  "max_ms": MAX_ENGAGED_MS, "gap_ms": SESSION_GAP_MINUTES * 60_000, "src_prefix": GOAL_SOURCE_PREFIX,
                  "base_prefix": GOAL_BASE_PREFIX, "revenue": GOAL_REVENUE, "revsrc_prefix": GOAL_REVENUE_SOURCE_PREFIX,
                  "unit": UNIT, "max_amount": MAX_AMOUNT, "journey": JOURNEY,
                  "cap": STORED_STEPS_CAP, "depth": MAX_STEPS}  # fmt: skip
        table = _arrow(con.execute(DUCKDB_SQL, params))
    finally:
        con.close()
    return Run(table, time.monotonic() - started, cpu_seconds() - cpu)


def compare(spark_rows: pa.Table, duck_rows: pa.Table) -> tuple[int, list[tuple]]:
    """(number of differing rows, the first 20): rows missing on either side or with other figures."""
    schema = pa.schema([(k, pa.string()) for k in KEYS] + [(f, pa.int64()) for f in FIGURES])
    with duckdb.connect() as con:
        con.register("s", spark_rows.select(schema.names).cast(schema))
        con.register("d", duck_rows.select(schema.names).cast(schema))
        both = ", ".join(f"s.{f} AS spark_{f}, d.{f} AS duckdb_{f}" for f in FIGURES)
        differ = " OR ".join(f"s.{f} IS DISTINCT FROM d.{f}" for f in FIGURES)
        # A row missing on one side has null keys there: compare with the keys of both.
        diff = f"""
            SELECT site_id, day, dimension, value, {both}
            FROM s FULL JOIN d USING (site_id, day, dimension, value)
            WHERE s.site_id IS NULL OR d.site_id IS NULL OR {differ}
        """
        count = con.sql(f"SELECT count(*) FROM ({diff})").fetchone()
        return count[0] if count else 0, con.sql(f"{diff} ORDER BY ALL LIMIT 20").fetchall()


def run(args: argparse.Namespace, cleanup: contextlib.ExitStack) -> dict[str, Any]:
    """Both engines, alternating, ``args.rounds`` times each; their breakdowns compared row by row."""
    from archive.schema import utc_dates_for

    root, meta = ensure_archive(args.events, args.seed, args.regenerate)
    site_tz: dict[str, str | None] = meta["sites"]
    days = rollup_days(meta)
    print(f"Archive: {meta['events']:,} rows ({meta['duplicates']:,} re-delivered copies), {meta['files']:,} files, "
          f"{meta['bytes'] / 2**20:,.0f} MiB, {len(site_tz)} sites, local days {days[0]}..{days[-1]}")  # fmt: skip
    load_before, t0 = os.getloadavg(), time.monotonic()
    spark = start_spark("4g", meta["bytes"])  # local mode: all of Spark
    cleanup.callback(spark.stop)
    spark_start = time.monotonic() - t0
    runs: dict[str, list[Run]] = {"spark": [], "duckdb": []}
    for number in range(args.rounds):
        for engine in ("spark", "duckdb") if number % 2 == 0 else ("duckdb", "spark"):
            run = run_spark(spark, root, site_tz, days) if engine == "spark" else run_duckdb(
                root, site_tz, days, utc_dates_for(days), "4GB")  # fmt: skip
            runs[engine].append(run)
            jobs = run.spark_jobs
            counts = f", {jobs['jobs']} jobs, {jobs['stages_run']} stages run" if jobs else ""
            print(f"  round {number + 1} {engine:6} wall {run.wall_s:8.2f} s, cpu {run.cpu_s:8.1f} s "
                  f"({run.table.num_rows:,} result rows{counts})", flush=True)  # fmt: skip
    differing, first = compare(runs["spark"][-1].table, runs["duckdb"][-1].table)
    wall = {engine: statistics.median(r.wall_s for r in values) for engine, values in runs.items()}
    cpu = {engine: statistics.median(r.cpu_s for r in values) for engine, values in runs.items()}
    ratio = wall["spark"] / wall["duckdb"]
    return {
        "benchmark": "rollup", "measured_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "archive": {**meta, "path": str(root)}, "rollup_days": days, "dimensions": DIMENSIONS,
        "config": {k: v for k, v in vars(args).items() if k not in {"out", "regenerate"}},
        **{engine: {"wall_s": round(wall[engine], 3), "events_per_s": round(args.events / wall[engine]),
                    "cpu_s": round(cpu[engine], 2), "result_rows": values[-1].table.num_rows,
                    "rounds": [{"wall_s": round(r.wall_s, 3), "cpu_s": round(r.cpu_s, 2)} for r in values]}
           for engine, values in runs.items()},
        "spark_jobs": runs["spark"][-1].spark_jobs,
        "spark_session_start_s": round(spark_start, 3), "ratio_spark_duckdb": round(ratio, 3),
        "cpu_ratio_spark_duckdb": round(cpu["spark"] / cpu["duckdb"], 3), "goal_ratio": goal_ratio(args.events),
        "goal_met": ratio <= goal_ratio(args.events),
        "cpu_goal_met": args.events < 10_000_000 or cpu["spark"] / cpu["duckdb"] <= GOAL_CPU_RATIO,
        "identical": differing == 0, "ok": differing == 0,
        "differing_rows": differing, "mismatches": [list(map(str, r)) for r in first],
        "machine": {**machine(), "loadavg_before": [round(x, 2) for x in load_before], "duckdb": duckdb.__version__,
                    "pyarrow": pa.__version__, "pyspark": importlib.metadata.version("pyspark")},
    }  # fmt: skip


def print_table(doc: dict[str, Any]) -> None:
    print()
    columns([("engine", "wall s", "events/s", "cpu s"), *((e, f"{doc[e]['wall_s']:.2f}", f"{doc[e]['events_per_s']:,}",
             f"{doc[e]['cpu_s']:.1f}") for e in ("spark", "duckdb"))])  # fmt: skip
    print(f"Spark / DuckDB: wall time {doc['ratio_spark_duckdb']:.2f} (goal <= {doc['goal_ratio']:g}: "
          f"{'met' if doc['goal_met'] else 'MISSED'}), CPU time {doc['cpu_ratio_spark_duckdb']:.2f}; Spark jobs "
          f"{doc['spark_jobs']['jobs']}, stages {doc['spark_jobs']['stages']} ({doc['spark_jobs']['stages_run']} run, "
          f"{doc['spark_jobs']['tasks']:,} tasks); Spark session "
          f"start (not in the wall time) {doc['spark_session_start_s']:.1f} s; figures identical: "
          f"{'yes' if doc['identical'] else 'NO'} ({doc['spark']['result_rows']:,} rows, "
          f"{doc['differing_rows']:,} differing; the first in the JSON)")  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.rollup_bench", description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--events", type=int, default=10_000_000, help="archive rows, duplicates included (default 10,000,000)")
    add("--seed", type=int, default=42)
    add("--rounds", type=int, default=1, help="runs of each engine (order alternates); medians")
    add("--regenerate", action="store_true", help="rebuild the cached archive")
    add("--out", type=Path, default=OUT / "rollup.json")
    args = parser.parse_args(argv)
    return run_main(lambda cleanup: run(args, cleanup), print_table, args.out)


if __name__ == "__main__":
    sys.exit(main())
