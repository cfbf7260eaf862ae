"""Shared fixtures: the validated configuration every test runs against."""

from __future__ import annotations

import pytest
from django.conf import settings

from footfall.config import Config


@pytest.fixture(scope="session")
def cfg() -> Config:
    """The process's Footfall configuration (pointed at the test stack by deploy/local/test.sh)."""
    return settings.FOOTFALL


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark everything under tests/integration so ``-m "not integration"`` runs the pure tier."""
    for item in items:
        if "integration" in item.path.parts:
            item.add_marker(pytest.mark.integration)
