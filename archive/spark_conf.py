"""Spark's settings of the rollup: its JVMs' options, what reading the archive needs, and how
secret settings reach spark-submit without a command line.

An ``s3://`` or ``s3a://`` archive is read through Hadoop's S3A connector (hadoop-aws and the
AWS SDK bundle of the Hadoop version inside pyspark, found on ``FOOTFALL_SPARK_EXTRA_CLASSPATH``
on the driver and every node); its endpoint and keys travel in a properties file readable only
by its owner, so no key shows in ``ps`` output or a process listing.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from footfall.config import S3_ARCHIVE_SCHEMES, Config

S3A = "org.apache.hadoop.fs.s3a.S3AFileSystem"
# HotSpot's optimizing compiler (C2) takes a method only once it is ten times hotter than by default.
# A rollup runs the code Spark generates for each of its few dozen queries for seconds to minutes:
# with the default thresholds, compiling it took about half the JVM's CPU time on a 2-core machine,
# most of it for code that never ran long enough to pay it back (figures: bench/README.md).
# The throughput collector: a batch job waits on no pause, and G1's concurrent work took CPU the
# job needed on two cores (1M rows: 86 and 81 s with G1, 73 and 70 s with it).
JVM_OPTIONS = " ".join((
    "-XX:+UseParallelGC",
    "-XX:Tier4InvocationThreshold=50000", "-XX:Tier4MinInvocationThreshold=20000",
    "-XX:Tier4CompileThreshold=60000", "-XX:Tier4BackEdgeThreshold=400000",
))  # fmt: skip
# A small input's job ends before C2's code pays back its compilation: the quick compiler (C1)
# alone. Side by side on 2 cores, two days of 3,000 events took 23 s and 29 CPU-s instead of
# 28 s and 41; 100,000 events 32 s instead of 35; at 300,000 (16 MB) the two were even, and at
# 1M C1 alone was a third slower (bench/README.md).
SMALL_JVM_OPTIONS = "-XX:TieredStopAtLevel=1"
SMALL_INPUT_BYTES = 8 * 1024 * 1024  # of archive files: about 150,000 events


def jvm_options(input_bytes: int) -> str:
    """The JVM options of a job reading ``input_bytes`` of archive files."""
    return SMALL_JVM_OPTIONS if input_bytes <= SMALL_INPUT_BYTES else JVM_OPTIONS


def jvm_conf(options: str) -> dict[str, str]:
    """Every JVM of the job with ``options``: the driver (all of it in local mode) and a cluster's executors."""
    return {"spark.driver.extraJavaOptions": options, "spark.executor.extraJavaOptions": options}


def archive_spark_conf(cfg: Config) -> dict[str, str]:
    """The ``spark.*`` settings the rollup needs to read ``cfg``'s archive (empty for a local one).

    Holds the secret key when one is configured: pass it with :func:`spark_properties_file`."""
    conf: dict[str, str] = {}
    if cfg.spark_extra_classpath and not cfg.archive_is_local:
        conf["spark.driver.extraClassPath"] = cfg.spark_extra_classpath
        conf["spark.executor.extraClassPath"] = cfg.spark_extra_classpath
    if urlsplit(cfg.archive_url).scheme not in S3_ARCHIVE_SCHEMES:
        return conf
    s3 = cfg.archive_s3
    # s3:// (pyarrow's name for the same bucket) is served by S3A too.
    conf["spark.hadoop.fs.s3.impl"] = S3A
    conf["spark.hadoop.fs.s3a.endpoint.region"] = s3.region
    if s3.endpoint:
        conf["spark.hadoop.fs.s3a.endpoint"] = s3.endpoint
        # An S3-compatible server on a host name or address has no per-bucket DNS names.
        conf["spark.hadoop.fs.s3a.path.style.access"] = "true"
        conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] = str(s3.endpoint.startswith("https:")).lower()
    if s3.access_key_id and s3.secret_access_key:
        conf["spark.hadoop.fs.s3a.aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
        conf["spark.hadoop.fs.s3a.access.key"] = s3.access_key_id
        conf["spark.hadoop.fs.s3a.secret.key"] = s3.secret_access_key
    return conf


@contextmanager
def spark_properties_file(conf: Mapping[str, str]) -> Iterator[Path | None]:
    """A properties file holding ``conf`` for ``spark-submit --properties-file`` (None when
    ``conf`` is empty), created 0600 and deleted when the block ends."""
    if not conf:
        yield None
        return
    fd, name = tempfile.mkstemp(prefix="footfall-spark-", suffix=".conf")  # mode 0600
    path = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            for key, value in sorted(conf.items()):
                out.write(f"{key}={_escape(value)}\n")
        yield path
    finally:
        path.unlink(missing_ok=True)


def _escape(value: str) -> str:
    """A Java properties value: backslashes doubled, line breaks escaped, leading blanks kept."""
    escaped = value.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
    return "\\" + escaped if escaped[:1] in (" ", "\t") else escaped
