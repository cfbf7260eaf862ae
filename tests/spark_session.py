"""One way to start the local Spark session tests use (its start takes seconds: share it where possible)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from pyspark.sql import SparkSession


@contextlib.contextmanager
def local_spark(app_name: str) -> Iterator[SparkSession]:
    """A ``local[1]`` session in UTC with two shuffle partitions and no UI, stopped afterwards."""
    logging.getLogger("py4j").setLevel(logging.WARNING)  # its INFO lines outlive pytest's log capture
    session = (
        SparkSession.builder.master("local[1]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()
