"""The archive on object storage: its settings, and the Spark settings that carry its keys off the command line."""

from __future__ import annotations

import datetime as dt
import stat
from pathlib import Path

import pytest

from archive.spark_conf import (
    JVM_OPTIONS,
    SMALL_INPUT_BYTES,
    SMALL_JVM_OPTIONS,
    archive_spark_conf,
    jvm_options,
    spark_properties_file,
)
from footfall.config import ConfigError, load_config
from historical.rollups import MAX_SIZED_FOLDERS, input_folders, job_jvm_options, spark_submit_command

BASE = Path("/srv/footfall")
S3 = {
    "FOOTFALL_ENV": "local",
    "ARCHIVE_URL": "s3://footfall-raw/archive/",
    "ARCHIVE_S3_ENDPOINT": "http://127.0.0.1:9000",
    "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG+bPxRfiCY\\EXAMPLEKEY",
    "FOOTFALL_SPARK_EXTRA_CLASSPATH": "/opt/hadoop-aws/*",
}


def test_s3_settings_are_read_and_the_secret_never_shown() -> None:
    cfg = load_config(S3, BASE)
    assert cfg.archive_url == "s3://footfall-raw/archive"
    assert not cfg.archive_is_local
    assert cfg.archive_s3.endpoint == "http://127.0.0.1:9000"
    assert cfg.archive_s3.region == "us-east-1"
    assert cfg.archive_s3.secret_access_key == S3["AWS_SECRET_ACCESS_KEY"]
    assert S3["AWS_SECRET_ACCESS_KEY"] not in repr(cfg)


@pytest.mark.parametrize(
    ("changes", "variable"),
    [
        ({"ARCHIVE_S3_ENDPOINT": "127.0.0.1:9000"}, "ARCHIVE_S3_ENDPOINT"),
        ({"ARCHIVE_S3_ENDPOINT": "ftp://s3.internal"}, "ARCHIVE_S3_ENDPOINT"),
        ({"ARCHIVE_S3_ENDPOINT": "http://s3.internal:99999"}, "ARCHIVE_S3_ENDPOINT"),
        ({"AWS_ACCESS_KEY_ID": ""}, "AWS_ACCESS_KEY_ID"),
        ({"AWS_SECRET_ACCESS_KEY": ""}, "AWS_SECRET_ACCESS_KEY"),
        ({"AWS_SECRET_ACCESS_KEY": "has a space"}, "AWS_SECRET_ACCESS_KEY"),
        ({"AWS_REGION": "US East"}, "AWS_REGION"),
        ({"FOOTFALL_SPARK_EXTRA_CLASSPATH": "jars/*"}, "FOOTFALL_SPARK_EXTRA_CLASSPATH"),
    ],
)
def test_bad_s3_settings_name_the_variable_and_hide_keys(changes: dict[str, str], variable: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config({**S3, **changes}, BASE)
    assert caught.value.variable == variable
    assert S3["AWS_SECRET_ACCESS_KEY"] not in str(caught.value)
    assert "has a space" not in str(caught.value)


def test_a_local_archive_needs_no_spark_settings() -> None:
    cfg = load_config({**S3, "ARCHIVE_URL": "/data/archive"}, BASE)
    assert archive_spark_conf(cfg) == {}


def test_spark_reads_s3_through_s3a_with_the_keys_in_a_private_file() -> None:
    """The keys reach spark-submit in a 0600 properties file, never in its arguments."""
    cfg = load_config(S3, BASE)
    conf = archive_spark_conf(cfg)
    assert conf["spark.hadoop.fs.s3.impl"] == "org.apache.hadoop.fs.s3a.S3AFileSystem"
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:9000"
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    assert conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "false"
    assert conf["spark.driver.extraClassPath"] == conf["spark.executor.extraClassPath"] == "/opt/hadoop-aws/*"
    with spark_properties_file(conf) as path:
        assert path is not None
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        text = path.read_text()
        command = spark_submit_command(cfg, "local[2]", dt.date(2026, 1, 1), dt.date(2026, 1, 2), {"s": "UTC"}, path)
    assert not path.exists()
    # Java properties: a backslash in the secret is doubled, so Spark reads it back unchanged.
    assert "spark.hadoop.fs.s3a.secret.key=wJalrXUtnFEMI/K7MDENG+bPxRfiCY\\\\EXAMPLEKEY\n" in text
    assert command[command.index("--properties-file") + 1] == str(path)
    assert not [arg for arg in command if S3["AWS_SECRET_ACCESS_KEY"] in arg or S3["AWS_ACCESS_KEY_ID"] in arg]


def test_shuffle_partitions_reach_spark_submit_only_when_set() -> None:
    """FOOTFALL_SPARK_SHUFFLE_PARTITIONS becomes the rollup's spark.sql.shuffle.partitions; unset, Spark's own stays."""
    args = ("local[2]", dt.date(2026, 1, 1), dt.date(2026, 1, 2), {"s": "UTC"})
    default = spark_submit_command(load_config(S3, BASE), *args)
    assert not [arg for arg in default if arg.startswith("spark.sql.shuffle.partitions")]
    command = spark_submit_command(load_config({**S3, "FOOTFALL_SPARK_SHUFFLE_PARTITIONS": "4"}, BASE), *args)
    assert command[command.index("spark.sql.shuffle.partitions=4") - 1] == "--conf"


def test_every_jvm_of_the_job_gets_the_compiler_options_of_its_input() -> None:
    """The driver and a cluster's executors start with the options given (JVM_OPTIONS unless
    told), on spark-submit's command line; a small input's job gets the quick compiler only."""
    args = ("local[2]", dt.date(2026, 1, 1), dt.date(2026, 1, 1), {})
    for options in (JVM_OPTIONS, SMALL_JVM_OPTIONS):
        command = spark_submit_command(load_config(S3, BASE), *args, jvm=options)
        for jvm in ("driver", "executor"):
            assert command[command.index(f"spark.{jvm}.extraJavaOptions={options}") - 1] == "--conf"
    assert f"spark.driver.extraJavaOptions={JVM_OPTIONS}" in spark_submit_command(load_config(S3, BASE), *args)
    assert jvm_options(0) == jvm_options(SMALL_INPUT_BYTES) == SMALL_JVM_OPTIONS
    assert jvm_options(SMALL_INPUT_BYTES + 1) == JVM_OPTIONS


def test_a_rollup_gets_the_jvm_options_of_its_input_size(tmp_path: Path) -> None:
    """Sized by the bytes of the data files its days read; beyond MAX_SIZED_FOLDERS site-dates
    it is taken as large without listing them."""
    day = dt.date(2026, 1, 10)
    assert input_folders(day, day, {"s": "UTC"}) == [f"site_id=s/date=2026-01-{d:02}" for d in (8, 9, 10, 11)]
    cfg = load_config({"FOOTFALL_ENV": "local", "ARCHIVE_URL": tmp_path.as_uri()}, BASE)
    folder = tmp_path / "events" / "site_id=s" / "date=2026-01-11" / "hour=03"
    folder.mkdir(parents=True)
    (folder / "part-a.parquet").write_bytes(b"x" * SMALL_INPUT_BYTES)
    assert job_jvm_options(cfg, day, day, {"s": "UTC"}) == SMALL_JVM_OPTIONS
    (folder / ".tmp-part-b.parquet").write_bytes(b"x")  # not a data file: not counted
    assert job_jvm_options(cfg, day, day, {"s": "UTC"}) == SMALL_JVM_OPTIONS
    (folder / "part-b.parquet").write_bytes(b"x")
    assert job_jvm_options(cfg, day, day, {"s": "UTC"}) == JVM_OPTIONS
    assert job_jvm_options(cfg, day, day + dt.timedelta(days=1), {"t": "UTC"}) == SMALL_JVM_OPTIONS  # empty
    many = {f"t{n}": "UTC" for n in range(MAX_SIZED_FOLDERS // 4 + 1)}  # 4 dates each: past the bound
    assert job_jvm_options(cfg, day, day, many) == JVM_OPTIONS
