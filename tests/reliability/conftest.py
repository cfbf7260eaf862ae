"""The reliability suite: scenarios that break things on purpose and check the exact truth.

Sizes: ``FOOTFALL_RELIABILITY=ci`` (default; bounded so the whole suite fits in CI) or
``full`` (the figures published in docs/reliability.md; run by deploy/local/reliability.sh).
Each scenario records one row — scenario, load, faults, events sent, lost, duplicated, 5xx —
through the ``results`` fixture; the rows of a run are written to
``artifacts/reliability/results.jsonl`` and rendered by ``python -m tests.reliability.report``.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "artifacts" / "reliability" / "results.jsonl"
FULL = os.environ.get("FOOTFALL_RELIABILITY", "ci") == "full"


def size(ci: int, full: int) -> int:
    """The scenario's size at the current scale."""
    return full if FULL else ci


@dataclass
class Row:
    scenario: str
    load: str
    faults: str
    sent: int = 0
    lost: int = 0
    duplicated: int = 0
    errors_5xx: int = 0
    notes: str = ""
    scale: str = field(default_factory=lambda: "full" if FULL else "ci")
    seconds: float = 0.0
    test: str = ""  # the pytest node id that measured the row (set by ``Results.record``)


class Results:
    """Collects the rows of one pytest session and appends them to the results file."""

    def __init__(self) -> None:
        self.rows: list[Row] = []

    def record(self, row: Row, started: float) -> None:
        row.seconds = round(time.monotonic() - started, 1)
        # "tests/reliability/test_x.py::test_y (call)": names the test, so the table can say how to reproduce it.
        row.test = row.test or os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" ", 1)[0]
        self.rows.append(row)
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        with RESULTS.open("a") as out:
            out.write(json.dumps({**asdict(row), "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}) + "\n")


@pytest.fixture(scope="session")
def results() -> Results:
    return Results()


@pytest.fixture(autouse=True)
def services_up() -> None:
    """Each scenario starts from a running stack: one that failed with a broker or Redis
    down (a restart that timed out on a loaded machine) must not fail the scenarios after it.
    Starting a healthy service is a no-op ("already running")."""
    from tests.reliability.faults import stack

    stack("start", "redis", "mongo", "kafka")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "reliability" in item.path.parts:
            item.add_marker(pytest.mark.reliability)
            item.add_marker(pytest.mark.integration)  # needs the real services, like tests/integration
