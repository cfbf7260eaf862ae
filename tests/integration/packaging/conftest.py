"""The project's two wheels, built once per run from a clean copy of the checkout, as a release would."""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
# Left out of the copy: an in-tree build would also pick up a stale build/ or egg-info, and the
# tracker's minifier and build are made anew by the wheel build (setup.py), as from a clean checkout.
NOT_SOURCE = shutil.ignore_patterns(".git", "var", "artifacts", "build", "dist", "*.egg-info", "__pycache__",
                                    ".hypothesis", ".ruff_cache", ".pytest_cache", "node_modules",
                                    "footfall.min.js")  # fmt: skip


@dataclass(frozen=True)
class Wheels:
    capture: Path  # footfall-capture, built from host/
    server: Path  # footfall


@pytest.fixture(scope="session")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Wheels:
    root = tmp_path_factory.mktemp("wheels")
    source, folder = root / "source", root / "dist"
    shutil.copytree(REPO, source, ignore=NOT_SOURCE)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(folder),
         str(source / "host"), str(source)],
        check=True, timeout=600,
    )  # fmt: skip
    [capture] = folder.glob("footfall_capture-*.whl")
    [server] = folder.glob("footfall-*.whl")
    return Wheels(capture, server)
