"""The wheel build builds the browser tracker first: ``pip wheel .`` ships ``footfall.min.js``.

Everything else is declared in pyproject.toml; this file only hooks ``build_py``. An editable
install skips the build (the checkout's scripts run ``python -m deploy.build_tracker``), and so
does a build without npm or the build script that finds the file already built (the
Containerfile builds it in a Node.js stage and copies it in).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
BUILT = ROOT / "collector" / "static" / "collector" / "footfall.min.js"


class BuildWithTracker(build_py):
    def run(self) -> None:
        can_build = shutil.which("npm") is not None and (ROOT / "deploy" / "build_tracker.py").exists()
        if self.editable_mode:
            pass
        elif can_build:
            subprocess.run([sys.executable, "-m", "deploy.build_tracker"], cwd=ROOT, check=True)
        elif BUILT.exists():
            print(f"footfall: no npm or no build script here: the wheel ships the tracker as built, {BUILT}")
        else:
            raise SystemExit("footfall: the tracker is not built and cannot be here: build it with npm (Node.js 18+)")
        super().run()


setup(cmdclass={"build_py": BuildWithTracker})
