"""PySpark in local mode: a tiny rollup over real events gives the exact counts."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from footfall.demo import DemoTraffic
from footfall_capture.events import encode


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    logging.getLogger("py4j").setLevel(logging.WARNING)  # its INFO lines outlive pytest's log capture
    session = (
        SparkSession.builder.master("local[1]")
        .appName("footfall-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    yield session
    session.stop()


def test_pageviews_per_page_from_json_events(spark: SparkSession, tmp_path) -> None:
    """Spark reads the wire format and counts page views and distinct visitors per page exactly."""
    traffic = DemoTraffic(seed=5, visitors=50)
    events = [traffic.event(1_763_700_000_000 + i * 1000) for i in range(300)]
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"\n".join(encode(e) for e in events))

    df = spark.read.json(str(path))
    rows = (
        df.groupBy("path")
        .agg(F.count("*").alias("pageviews"), F.countDistinct("visitor_id").alias("visitors"))
        .collect()
    )
    got = {r["path"]: (r["pageviews"], r["visitors"]) for r in rows}
    pv = Counter(e.path for e in events)
    uv = {p: len({e.visitor_id for e in events if e.path == p}) for p in pv}
    assert got == {p: (pv[p], uv[p]) for p in pv}
