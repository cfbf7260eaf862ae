"""The nightly rollup job: archive → exact daily/hourly rollups in MongoDB. Extract, transform, load.

Run through ``manage.py rollup`` (which passes the sites and their time zones), by hand as a
module (``python -m spark_jobs.rollup --master 'local[2]' …``), or with spark-submit, which
takes the module's file::

    spark-submit --master spark://host:7077 spark_jobs/rollup.py --from 2026-11-01 --to 2026-11-07 \\
        --sites '{"demo": "Europe/Berlin"}' --archive-url file:///data/archive --mongo-db footfall \\
        --funnels '{"demo": [{"funnel_id": "7", "steps": [...]}]}'

with MongoDB's URL in the environment variable ``FOOTFALL_ROLLUP_MONGO_URL`` (a password in
an argument would show in every local user's ``ps``). ``--funnels`` gives each site's funnels
as :meth:`footfall.goals.FunnelSpec.to_json` writes them, or ``@path`` of a file holding that
JSON; a site left out has none, and its funnel documents of the days rolled up are removed. ``--goals`` gives
each site's goals as :meth:`footfall.goals.GoalSpec.to_json` writes them.

* extract: :func:`archive.reader.read_events`, the archive's events of the requested local days
  (and the evening before, so sessions starting then are whole);
* transform: :func:`spark_jobs.transforms.rollup` (pure DataFrame functions);
* load: :func:`historical.store.load_day` per site and day (replaces the day's documents).

Days are processed in chunks so a long backfill keeps memory bounded. With ``--progress PATH``
each finished day is appended to ``PATH`` as one JSON line, ``{"site": …, "day": …,
"events_read": n}`` (:mod:`historical.progress`), for the caller's progress bar and result; people
running the job by hand read the same on stdout.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from archive.reader import read_events
from footfall.goals import FUNNEL_TIME_BOUNDS_MS, DefinitionError, FunnelSpec, GoalSpec
from historical.buckets import span_transitions
from historical.journeys import journey_documents
from historical.progress import progress_line
from historical.store import (
    GOAL_SOURCES,
    MONGO_URL_VARIABLE,
    DayDocuments,
    connect,
    ensure_indexes,
    hour_document,
    load_day,
)
from spark_jobs.transforms import BREAKDOWN_EXTRAS, COPIES, localized, rollup_localized

CHUNK_DAYS = 7
# The job's Spark SQL settings, whoever starts its session (spark-submit here, the rollup bench).
SESSION_CONF = {
    "spark.sql.session.timeZone": "UTC",
    # Let adaptive execution coalesce the persisted rows' partitions to their size (SPARK-46995;
    # off by default since Spark 4.0): otherwise every output re-reads them in as many tasks as
    # spark.sql.shuffle.partitions (200), however small the day (figures: bench/README.md).
    "spark.sql.optimizer.canChangeCachedPlanOutputPartitioning": "true",
    # Shuffle the archive's rows with the sort-based writer, one file per map task. Under its default
    # threshold (200 partitions) Spark writes a file per task and partition: tens of thousands of small
    # files when the archive's many small files make many map tasks (bench/README.md).
    "spark.shuffle.sort.bypassMergeThreshold": "0",
}
DOUBLE_DIGITS = 6  # doubles rounded so local and cluster runs give identical documents
# Where the job keeps the rows it reads more than once: on local disk, not in the heap. Cached in
# memory, a large window's rows hold up to spark.memory.storageFraction of unified memory that
# execution cannot evict, and the aggregations of the outputs then fail for want of memory
# instead of spilling ("Could not allocate memory to grow BytesToBytesMap" at 10M rows with a
# 4g local driver); on disk they still spare every output the archive read and the dedupe shuffle.
PERSIST = StorageLevel.DISK_ONLY


def persisted(local: DataFrame) -> DataFrame:
    """``local`` (:func:`spark_jobs.transforms.localized`) persisted with :data:`PERSIST` and computed now.

    Deduplicated and localized once for every output, each of which would otherwise redo the read
    and the shuffles. Computed before any output is planned: a plan over rows already cached knows
    their partitioning by visitor, and its per-visitor windows and groups then need no shuffle or
    sort of their own (over rows not yet cached, adaptive execution cannot tell it in advance)."""
    local = local.persist(PERSIST)
    local.count()
    return local


OnDay = Callable[[str, str, int], None]  # (site, day, events read) of each day loaded


def day_range(first: dt.date, last: dt.date) -> list[str]:
    return [(first + dt.timedelta(days=i)).isoformat() for i in range((last - first).days + 1)]


def zone_changes(zones: Iterable[str | None], days: Sequence[str]) -> list[tuple[str, int]]:
    """The ``(zone, ms)`` offset changes :func:`spark_jobs.transforms.localize` needs: every
    change of ``zones`` around ``days`` and the evening before them, computed with zoneinfo."""
    first, last = dt.date.fromisoformat(min(days)), dt.date.fromisoformat(max(days))
    return span_transitions(frozenset(z or "UTC" for z in zones), first - dt.timedelta(days=2), last)


def _round(row: dict[str, object]) -> dict[str, object]:
    return {k: round(v, DOUBLE_DIGITS) if isinstance(v, float) else v for k, v in row.items()}


def _rows(rows: Iterable[Row], drop: Iterable[str] = ("site_id", "day")) -> Iterable[tuple[str, str, dict]]:
    for row in rows:
        data = row.asDict()
        # Columns only some dimensions have stay out of the others' documents.
        kept = {k: v for k, v in data.items() if k not in drop and (v is not None or k not in BREAKDOWN_EXTRAS)}
        yield str(data["site_id"]), str(data["day"]), _round(kept)


def parse_goals(text: str | None, sites: Iterable[str]) -> dict[str, list[GoalSpec]]:
    """``--goals``: ``{"site_id": [GoalSpec JSON, ...]}`` of sites among ``sites``, or ``@path``
    of a file holding it; raises
    ValueError naming what is wrong."""
    if not text:
        return {}
    try:
        if text.startswith("@"):  # a file, as for --funnels
            text = Path(text[1:]).read_text(encoding="utf-8")
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc}") from None
    except OSError as exc:
        raise ValueError(f"cannot read {text[1:]}: {exc.strerror}") from None
    if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
        raise ValueError('must be a JSON object {"site_id": [goal, ...]}')
    unknown = sorted(set(data) - set(sites))
    if unknown:
        raise ValueError(f"goals of sites not rolled up: {', '.join(unknown)}")
    goals: dict[str, list[GoalSpec]] = {}
    for site, specs in data.items():
        for number, spec in enumerate(specs):
            if not isinstance(spec, dict):
                raise ValueError(f"site {site!r}, goal {number}: must be a JSON object")
            try:
                goals.setdefault(site, []).append(GoalSpec.from_json(spec))
            except DefinitionError as exc:
                raise ValueError(f"site {site!r}, goal {number}: {exc}") from None
        ids = [g.goal_id for g in goals.get(site, [])]
        if "" in ids or len(ids) != len(set(ids)):
            raise ValueError(f"site {site!r}: every goal needs a goal_id of its own")
    return goals


def parse_funnels(text: str) -> dict[str, list[FunnelSpec]]:
    """The ``--funnels`` argument: JSON ``{"site_id": [FunnelSpec JSON, ...]}``, or ``@path`` of
    a file holding it (a long list would not fit one argument). Raises ValueError saying what
    is wrong."""
    if text.startswith("@"):
        text = Path(text[1:]).read_text(encoding="utf-8")
    data = json.loads(text)
    if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
        raise ValueError('expected {"site_id": [funnel, ...], ...}')
    out: dict[str, list[FunnelSpec]] = {}
    for site, specs in data.items():
        if not all(isinstance(spec, dict) for spec in specs):
            raise ValueError(f"site {site!r}: every funnel must be a JSON object")
        try:
            out[site] = [FunnelSpec.from_json(spec) for spec in specs]
        except (DefinitionError, TypeError, ValueError) as exc:
            raise ValueError(f"site {site!r}: {exc}") from exc
    return out


def _zero_step() -> dict[str, object]:
    return {"visitors": 0, "median_ms": None, "times_ms": [0] * (len(FUNNEL_TIME_BOUNDS_MS) + 1)}


def funnel_documents(specs: Sequence[FunnelSpec], rows: Mapping[str, Mapping[int, dict]]) -> list[dict[str, object]]:
    """One document body per funnel of ``specs`` for one site and day: ``rows`` are the
    transform's step rows of that site and day by funnel id and step; a funnel or step without
    a row (nobody started it that day) has zeros."""
    docs = []
    for spec in specs:
        steps = rows.get(spec.funnel_id, {})
        docs.append(
            {
                "funnel_id": spec.funnel_id,
                "name": spec.name,
                "steps": [
                    {k: steps[n][k] for k in ("visitors", "median_ms", "times_ms")} if n in steps else _zero_step()
                    for n in range(1, len(spec.steps) + 1)
                ],
            }
        )
    return docs


ZERO_DAY = {
    "pageviews": 0, "visitors": 0, "sessions": 0, "bounces": 0, "bounce_rate": 0.0, "visit_duration_s": 0.0,
    "events": 0, "bot_events": 0, "custom_events": 0, "engaged_ms": 0, "engagements": 0,
}  # fmt: skip


@dataclass
class DayRows:
    """The rollup's rows collected to the driver, by ``(site, day)``."""

    read: dict[tuple[str, str], int]  # archive rows read, before dedup
    daily: dict[tuple[str, str], dict] = field(default_factory=dict)
    hourly: dict[tuple[str, str], list[dict]] = field(default_factory=lambda: defaultdict(list))
    breakdowns: dict[tuple[str, str], list[dict]] = field(default_factory=lambda: defaultdict(list))
    # funnel id -> step -> the step's row
    steps: dict[tuple[str, str], dict[str, dict[int, dict]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(dict))
    )
    journeys: dict[tuple[str, str], list[dict]] = field(default_factory=lambda: defaultdict(list))


def collect_rows(result: Mapping[str, DataFrame], read: DataFrame, site_tz: Mapping[str, str]) -> DayRows:
    """:func:`spark_jobs.transforms.rollup`'s ``result`` and the ``read`` counts per site and day, on the driver.

    One ``collect`` per output. Not ``toLocalIterator``, which runs a job per partition of the output, nor
    one action over a union of the outputs, whose plan adaptive execution re-optimizes whole after every
    stage (slower on a small day than one collect per output). The driver holds every row of the chunk
    either way: the load step needs them."""
    rows = DayRows(read={(r["site_id"], r["day"]): r["count"] for r in read.collect()})
    rows.daily = {(s, d): row for s, d, row in _rows(result["daily"].collect())}
    for s, d, row in _rows(result["hourly"].collect()):
        start_ms = int(row.pop("bucket_start"))  # type: ignore[call-overload]
        rows.hourly[(s, d)].append({**hour_document(d, site_tz[s], start_ms), **row})
    for s, d, row in _rows(result["breakdowns"].collect()):
        rows.breakdowns[(s, d)].append(row)
    for s, d, row in _rows(result["funnels"].collect()):
        rows.steps[(s, d)][str(row["funnel_id"])][int(row["step"])] = row  # type: ignore[call-overload]
    for s, d, row in _rows(result["journeys"].collect()):
        rows.journeys[(s, d)].append(row)
    return rows


def transform_and_load(
    spark: SparkSession,
    events: DataFrame,
    site_tz: dict[str, str],
    days: Sequence[str],
    mongo_url: str,
    mongo_db: str,
    funnels: Mapping[str, Sequence[FunnelSpec]] | None = None,
    goals: Mapping[str, Sequence[GoalSpec]] | None = None,
    on_day: OnDay | None = None,
) -> list[tuple[str, str, int]]:
    """Roll up ``days`` for every site of ``site_tz``; return (site, day, events read) per day loaded.

    ``funnels``: each site's funnels (a site left out has none). ``on_day`` hears of each day
    once its documents are loaded."""
    tz_df = spark.createDataFrame(list(site_tz.items()), "site_id STRING, tz STRING")
    changes = zone_changes(set(site_tz.values()), days)
    funnels = {site: list(specs) for site, specs in (funnels or {}).items() if site in site_tz}
    goals = goals or {}
    local = persisted(localized(events, tz_df, changes))
    # Rows read per local day before dedup (the run record says what the figures came from): each
    # kept event counts its copies, which share its time, so the archive is scanned once.
    in_days = local.where(F.col("day").isin(list(days)))
    read = in_days.groupBy("site_id", "day").agg(F.sum(COPIES).alias("count"))
    try:
        rows = collect_rows(rollup_localized(local, list(days), funnels=funnels, goals=goals), read, site_tz)
    finally:
        local.unpersist()

    client, db = connect(mongo_url, mongo_db)
    ensure_indexes(db)
    loaded = []
    try:
        for site in sorted(site_tz):
            for day in days:
                key = (site, day)
                stats = rows.daily.get(key, ZERO_DAY)
                run = {
                    "status": "complete",
                    "events_read": int(rows.read.get(key, 0)),
                    "pageviews": stats["pageviews"],
                    "tz": site_tz[site],
                    "computed_at": dt.datetime.now(dt.UTC),
                    "spark_master": spark.sparkContext.master,
                    # Which goals this day counts: the query layer names days rolled up before a goal.
                    "goal_ids": [g.goal_id for g in goals.get(site, [])],
                    # ... and which of them it counts revenue of (a goal may gain revenue later).
                    "revenue_goal_ids": [g.goal_id for g in goals.get(site, []) if g.has_revenue],
                    # Where its goal_src:*/goal_base:* rows are (a day rolled up before them has none).
                    "goal_sources": GOAL_SOURCES,
                }
                documents = DayDocuments(
                    site, day, stats, rows.hourly.get(key, []), rows.breakdowns.get(key, []), run,
                    funnels=funnel_documents(funnels.get(site, []), rows.steps.get(key, {})),
                    journeys=journey_documents(rows.journeys.get(key, [])),
                )  # fmt: skip
                load_day(db, documents)
                loaded.append((site, day, run["events_read"]))
                if on_day is not None:
                    on_day(site, day, run["events_read"])
    finally:
        client.close()
    return loaded


def run(
    spark: SparkSession,
    first: dt.date,
    last: dt.date,
    site_tz: dict[str, str],
    archive_url: str,
    mongo_url: str,
    mongo_db: str,
    funnels: Mapping[str, Sequence[FunnelSpec]] | None = None,
    goals: Mapping[str, Sequence[GoalSpec]] | None = None,
    on_day: OnDay | None = None,
) -> list[tuple[str, str, int]]:
    """Extract, transform and load every day of ``[first, last]`` in chunks (``on_day``: as for
    :func:`transform_and_load`)."""
    days = day_range(first, last)
    loaded = []
    for start in range(0, len(days), CHUNK_DAYS):
        chunk = days[start : start + CHUNK_DAYS]
        events = read_events(spark, archive_url, sorted(site_tz), chunk)
        loaded += transform_and_load(spark, events, site_tz, chunk, mongo_url, mongo_db, funnels, goals, on_day)
    return loaded


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Footfall rollup: archive -> MongoDB")
    parser.add_argument("--from", dest="first", required=True, type=dt.date.fromisoformat)
    parser.add_argument("--to", dest="last", required=True, type=dt.date.fromisoformat)
    parser.add_argument("--sites", required=True, help='JSON object {"site_id": "IANA time zone"}')
    parser.add_argument("--archive-url", required=True)
    parser.add_argument("--mongo-db", default="footfall")
    parser.add_argument("--goals", default=None, help='JSON object {"site_id": [goal, ...]} (GoalSpec.to_json)')
    parser.add_argument("--master", default=None, help="only when not set by spark-submit")
    parser.add_argument(
        "--funnels", default="{}", help='JSON {"site_id": [funnel, ...]} (FunnelSpec.to_json), or @file holding it'
    )
    parser.add_argument("--progress", type=Path, default=None, help="append a JSON line per day loaded to this file")
    args = parser.parse_args(argv)
    if args.last < args.first:
        parser.error("--to is before --from")
    sites = json.loads(args.sites)
    try:
        funnels = parse_funnels(args.funnels)
    except (OSError, ValueError) as exc:  # json.JSONDecodeError is a ValueError
        parser.error(f"--funnels: {exc}")
    try:
        goals = parse_goals(args.goals, sites)
    except ValueError as exc:
        parser.error(f"--goals: {exc}")
    mongo_url = os.environ.get(MONGO_URL_VARIABLE, "")
    if not mongo_url:
        parser.error(f"{MONGO_URL_VARIABLE}: MongoDB's URL is required in the environment")
    builder = SparkSession.builder.appName("footfall-rollup").config(map=SESSION_CONF)
    if args.master:
        builder = builder.master(args.master)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    started = time.monotonic()

    def on_day(site: str, day: str, events_read: int) -> None:
        print(f"loaded {site} {day}: {events_read} events read", flush=True)
        if args.progress is not None:
            # One whole line per write, flushed: the caller reads the file while the job runs.
            with args.progress.open("a", encoding="utf-8") as out:
                out.write(progress_line(site, day, events_read))

    try:
        loaded = run(spark, args.first, args.last, sites, args.archive_url, mongo_url, args.mongo_db, funnels,
                     goals, on_day)  # fmt: skip
    finally:
        spark.stop()
    events = sum(n for *_, n in loaded)
    print(f"done days={len(loaded)} events={events} seconds={time.monotonic() - started:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
