"""The batch layer reads a property's text as footfall.goals.prop_text gives it, so a goal on
``n = 3`` and a property breakdown mean the same in Spark as in the speed layer."""

from __future__ import annotations

import math
import random

import msgspec
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from footfall.goals import prop_text
from spark_jobs.columns import props_map

EXAMPLES: list[object] = [
    0, 3, -5, 2**53 + 1, 10**30, 10**40, -(2**63), 0.1, 0.002, 1.5, 3.0, -3.0, -0.0, 100000.0, 19.99, 1e7,
    12345678.9, 123456789.123, 0.0001, 0.00001, 0.0000999, 1e-6, 1.5e-7, 1e15, 1e16, 1e20, 1e21, 2.5e300,
    1.7976931348623157e308, True, False, None, "pro", "", "3.0", "ünï", 'a"b\\c', float("nan"), float("inf"),
]  # fmt: skip


def test_spark_reads_every_value_as_prop_text(spark: SparkSession):
    """Examples at every boundary of the number forms, and thousands of random doubles within the
    magnitudes Java 17 and Python write alike (plain decimals: below 1e16, from 1e-5)."""
    rng = random.Random(7)
    values = EXAMPLES + [rng.uniform(-1e6, 1e6) for _ in range(2000)]
    values += [round(rng.uniform(0, 1000), rng.randrange(4)) for _ in range(1000)]
    values += [math.ldexp(rng.random(), rng.randrange(-16, 53)) for _ in range(1000)]
    # As the archive holds them: msgspec's JSON of the event's props.
    rows = [(i, msgspec.json.encode({"k": v, "x": 1}).decode()) for i, v in enumerate(values)]
    frame = spark.createDataFrame(rows, "i INT, props STRING")
    read = frame.select("i", F.coalesce(props_map()["k"], F.lit("")).alias("text")).collect()
    got = {r["i"]: r["text"] for r in read}
    wrong = [(values[i], got[i], prop_text(values[i])) for i in range(len(values)) if got[i] != prop_text(values[i])]
    assert not wrong, wrong[:10]


def test_props_that_are_no_json_object_read_as_no_properties(spark: SparkSession):
    """Malformed JSON, arrays and bare strings give a null map instead of failing the job."""
    frame = spark.createDataFrame([("nope",), ("[1]",), ('"s"',), (None,), ('{"a":{"b":1}}',)], "props STRING")
    assert [r[0] for r in frame.select(props_map()).collect()] == [None, None, None, None, {"a": '{"b":1}'}]
