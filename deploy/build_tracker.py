"""Build the minified browser tracker: ``python -m deploy.build_tracker``.

Installs the minifier that ``collector/tracker/package-lock.json`` pins (``npm ci``, again only
when the lock changes), runs ``npm run build`` (terser, options in ``package.json``), and
prints the built file's size, gzipped size and Subresource Integrity hash. Needs Node.js 18+
with npm. ``deploy/local/bootstrap.sh`` runs it, so up.sh and test.sh do; so does the wheel
build (``setup.py``). Standard library only: it runs before the server is importable.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

SOURCE_DIR = Path(__file__).resolve().parents[1] / "collector" / "tracker"
BUILT = SOURCE_DIR.parent / "static" / "collector" / "footfall.min.js"


class BuildFailed(RuntimeError):
    """The tracker could not be built; the message says why and what to install."""


def _npm(*args: str) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise BuildFailed("npm is not on PATH: the tracker's build needs Node.js 18+ with npm (nodejs.org)")
    done = subprocess.run([npm, *args], cwd=SOURCE_DIR, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BuildFailed(f"npm {' '.join(args)} failed:\n{done.stdout}{done.stderr}")


def build() -> Path:
    """Build ``footfall.min.js`` from the readable source; the minifier is installed first when
    its lock changed since the last install."""
    lock = (SOURCE_DIR / "package-lock.json").read_bytes()
    installed = SOURCE_DIR / "node_modules" / f".footfall-lock-{hashlib.sha256(lock).hexdigest()[:16]}"
    if not installed.exists():
        _install(installed)
    try:
        _npm("run", "--silent", "build")
    except BuildFailed:  # e.g. a node_modules copied from elsewhere, its links broken: install anew, once
        _install(installed)
        _npm("run", "--silent", "build")
    return BUILT


def _install(stamp: Path) -> None:
    _npm("ci", "--no-audit", "--no-fund", "--loglevel=error")
    stamp.touch()


def describe(path: Path) -> str:
    """One line: the built file's size, its gzipped size and its integrity hash."""
    body = path.read_bytes()
    integrity = "sha384-" + base64.b64encode(hashlib.sha384(body).digest()).decode()
    return f"{path.name}: {len(body):,} bytes, {len(gzip.compress(body, 9)):,} gzipped, integrity {integrity}"


if __name__ == "__main__":
    try:
        print("build_tracker: " + describe(build()), file=sys.stderr)
    except BuildFailed as exc:
        sys.exit(f"build_tracker: {exc}")
