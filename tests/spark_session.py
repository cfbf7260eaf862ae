"""The one local Spark session of a test run (starting one takes seconds), and rollups run in it."""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
from collections.abc import Iterator, Mapping, Sequence

from pyspark.sql import SparkSession

from archive.spark_conf import SMALL_JVM_OPTIONS, jvm_conf
from footfall.config import Config
from footfall.goals import FunnelSpec, GoalSpec
from historical.rollups import RollupResult, announce_rollup, plan_rollup
from spark_jobs import rollup as job


@contextlib.contextmanager
def local_spark(app_name: str) -> Iterator[SparkSession]:
    """A ``local[2]`` session in UTC with two shuffle partitions and no UI, with the rollup
    job's own SQL settings and the JVM options it takes for a small input (the tests' archives
    are all small), stopped afterwards. Whole-stage code generation is off: compiling each
    query's Java cost more than running it on rows this few (the Spark tests took 16 % less
    time without it); the results are the same either way."""
    logging.getLogger("py4j").setLevel(logging.WARNING)  # its INFO lines outlive pytest's log capture
    session = (
        SparkSession.builder.master("local[2]")
        .appName(app_name)
        .config(map=job.SESSION_CONF)
        .config(map=jvm_conf(SMALL_JVM_OPTIONS))
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.codegen.wholeStage", "false")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


def roll_up_in_session(
    spark: SparkSession,
    cfg: Config,
    first: dt.date,
    last: dt.date,
    site_ids: Sequence[str] | None = None,
    funnels: Mapping[str, Sequence[FunnelSpec]] | None = None,
    goals: Mapping[str, Sequence[GoalSpec]] | None = None,
) -> RollupResult:
    """:func:`historical.rollups.run_rollup` with the job run in ``spark`` rather than by
    ``spark-submit``: the same plan, job and announcement, without a JVM start per rollup.
    Tests whose subject is the command line, the Celery task or a cluster use ``run_rollup``."""
    plan = plan_rollup(first, last, site_ids, funnels, goals)
    result = RollupResult()
    if not plan.zones:
        return result
    loaded = job.run(spark, first, last, plan.zones, cfg.archive_url, cfg.mongo_url, cfg.mongo_db,
                     plan.funnels, plan.goals)  # fmt: skip
    result.days = [(site, day) for site, day, _ in loaded]
    result.events = sum(n for *_, n in loaded)
    result.drift = announce_rollup(cfg, result.days, plan.zones)
    return result
