"""Shared fixtures: the validated configuration every test runs against."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from django.conf import settings

from footfall.config import Config
from footfall_capture.quiet_log import OncePerKind

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def cfg() -> Config:
    """The process's Footfall configuration (pointed at the test stack by deploy/local/test.sh)."""
    return settings.FOOTFALL


@pytest.fixture(scope="session", autouse=True)
def quick_password_hashing() -> None:
    """Passwords hashed with MD5 in the tests' own processes, as Django advises for tests: the
    deployment's PBKDF2 is slow on purpose (about 0.3 CPU-s a check here) and the tests sign in
    hundreds of times, for what they are about, never the hash. Servers a test starts as
    processes of their own hash as deployed."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def quiet_logs_start_afresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test sees its own first log line of a kind: the once-a-minute filters
    (footfall_capture/quiet_log.py) forget the lines earlier tests of the process logged."""
    for logger in list(logging.Logger.manager.loggerDict.values()):
        for quiet in getattr(logger, "filters", ()):
            if isinstance(quiet, OncePerKind):
                monkeypatch.setattr(quiet, "seen", {})


@pytest.fixture(autouse=True)
def store_breakers_start_closed() -> None:
    """Each test starts with every store's breaker closed (footfall/breaker.py): a store an
    earlier test made fail, on purpose, is not refused to the next one for its cool-down."""
    from query.health import BREAKERS

    for breaker in BREAKERS.values():
        breaker.succeeded()


@pytest.fixture(scope="session")
def django_db_modify_db_settings(
    django_db_modify_db_settings_parallel_suffix: None, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The test database is a file in the session's temporary folder, as a deployment's SQLite is.

    Django's default in-memory test database shares one cache between connections, where a
    connection meeting another's table lock fails at once ("database table is locked") instead
    of waiting out the busy timeout; the in-thread Celery worker of the alert tests met it.
    The name is set here, after pytest-django's per-worker suffix, because that suffix turned
    the unset name into a path relative to the working directory.
    """
    for database in settings.DATABASES.values():
        database.setdefault("TEST", {})["NAME"] = str(tmp_path_factory.getbasetemp() / "footfall-test.sqlite3")


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """The run's one local Spark session (tests/spark_session.py), started when a test first
    asks for it: the transform tests and the rollups of integration tests share it."""
    from tests.spark_session import local_spark  # pyspark only where a test needs it

    with local_spark("footfall-tests") as session:
        yield session


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark everything under tests/integration so ``-m "not integration"`` runs the pure tier."""
    for item in items:
        if "integration" in item.path.parts:
            item.add_marker(pytest.mark.integration)
