"""Building the project's wheels for the packaging tests, as a release would."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def build_wheel(project: Path, out: Path) -> Path:
    """``pip wheel`` of the distribution in ``project`` (no dependencies) into ``out``; the wheel's path."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(out), str(project)],
        check=True, timeout=600,
    )  # fmt: skip
    [wheel] = out.glob("*.whl")
    return wheel
