"""Reading the archive with Spark: the events of some sites and local days, partition-pruned.

The layout and columns are :mod:`archive.schema`'s; Spark reads with its explicit DDL rather
than inferring a schema from the files.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from archive.schema import EVENTS_DIR, SPARK_DDL, utc_dates_for


def read_events(spark: SparkSession, archive_url: str, sites: Sequence[str], days: Sequence[str]) -> DataFrame:
    """The archived events of ``sites`` on the UTC dates covering ``days`` (partition-pruned)."""
    path = f"{archive_url.rstrip('/')}/{EVENTS_DIR}"
    try:
        events = spark.read.schema(SPARK_DDL).parquet(path)
    except Exception as exc:  # an archive that does not exist yet holds no events
        if "PATH_NOT_FOUND" not in str(exc) and "does not exist" not in str(exc):
            raise
        return spark.createDataFrame([], SPARK_DDL)
    return events.where(F.col("date").isin(list(utc_dates_for(days))) & F.col("site_id").isin(list(sites)))
