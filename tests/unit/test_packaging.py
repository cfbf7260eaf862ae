"""The server's wheel declares every file it serves or renders (templates, tracker, Dash assets)."""

from __future__ import annotations

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# The tracker's readable source and its minifier: what the build reads, not what the server serves.
BUILD_INPUTS = REPO / "collector" / "tracker"
PACKAGES = ("footfall", "footfall_server", "api", "collector", "realtime", "historical", "dashboard", "spark_jobs")


def test_every_data_file_of_the_server_packages_is_package_data() -> None:
    package_data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    declared = {
        path for package, patterns in package_data.items() for pattern in patterns
        for path in (REPO / package).glob(pattern) if path.is_file()
    }  # fmt: skip
    data_files = {
        path for package in PACKAGES for path in (REPO / package).rglob("*")
        if path.is_file() and path.suffix not in {".py", ".pyc"} and "__pycache__" not in path.parts
        and not path.is_relative_to(BUILD_INPUTS)
    }  # fmt: skip
    assert data_files - declared == set()
    assert REPO / "collector" / "static" / "collector" / "footfall.min.js" in declared  # built by bootstrap
