"""Shared fixtures: the validated configuration every test runs against."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from django.conf import settings

from footfall.config import Config

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def cfg() -> Config:
    """The process's Footfall configuration (pointed at the test stack by deploy/local/test.sh)."""
    return settings.FOOTFALL


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
