"""Fixtures for the Spark transform tests: builders of tiny archive-shaped frames with the
archive's own schema (SPARK_DDL), in the run's one Spark session (``spark``, tests/conftest.py)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from archive.schema import SPARK_DDL
from historical.buckets import span_transitions

DAY = "2025-11-24"
T0 = 1_763_942_400_000  # 2025-11-24 00:00:00 UTC, in ms
MINUTE = 60_000
HOUR = 60 * MINUTE

# Every archive column left out of a test row takes this value: a human page view of "/"
# on site "s", received when it happened, from Kafka partition 0.
DEFAULTS: dict[str, object] = {"site_id": "s", "type": "pageview", "path": "/", "is_bot": False}
DEFAULTS |= {"kafka_partition": 0, "kafka_offset": 0}


@pytest.fixture(scope="session")
def make_events(spark: SparkSession) -> Callable[..., DataFrame]:
    """``make_events(*rows)``: archive rows (SPARK_DDL) from dicts giving only what a test is about.

    ``received_at`` defaults to ``ts``; the UTC partition columns ``date``/``hour`` follow ``ts``.
    """
    schema = StructType.fromDDL(SPARK_DDL)

    def build(*rows: dict[str, object]) -> DataFrame:
        full = []
        for row in rows:
            values = DEFAULTS | row
            values.setdefault("received_at", values["ts"])
            moment = dt.datetime.fromtimestamp(int(values["ts"]) / 1000, dt.UTC)
            values |= {"date": f"{moment:%Y-%m-%d}", "hour": f"{moment:%H}"}
            full.append(tuple(values.get(name) for name in schema.fieldNames()))
        return spark.createDataFrame(full, schema)

    return build


@pytest.fixture(scope="session")
def make_zones(spark: SparkSession) -> Callable[..., DataFrame]:
    """``make_zones({"site": "Europe/Berlin"})``: the site_tz frame the rollup joins."""

    def build(zones: dict[str, str]) -> DataFrame:
        return spark.createDataFrame(list(zones.items()), "site_id STRING, tz STRING")

    return build


# Every zone the Spark tests use, and the years they cover: the offset changes localize
# needs (on a real run, spark_jobs.rollup.zone_changes lists them for the days rolled up).
TEST_ZONES = frozenset(
    {
        "UTC", "Europe/Berlin", "America/Los_Angeles", "Asia/Kolkata", "Australia/Lord_Howe",
        "Australia/Sydney", "America/Caracas", "America/New_York",
    }
)  # fmt: skip


@pytest.fixture(scope="session")
def changes() -> list[tuple[str, int]]:
    """The ``(zone, ms)`` offset changes of :data:`TEST_ZONES` from 2015 to 2027."""
    return span_transitions(TEST_ZONES, dt.date(2015, 1, 1), dt.date(2027, 12, 31))
