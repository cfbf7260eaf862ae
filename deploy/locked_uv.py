"""Print the pip requirement of the uv release that ``uv.lock`` pins, with the lock's hashes.

``deploy/local/bootstrap.sh`` and the Containerfile install uv with it (``pip install
--require-hashes -r``), then uv installs everything else from the lock: the installer is
pinned and checked like the packages it installs. Standard library only: it runs before
anything is installed.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

LOCK = Path(__file__).resolve().parents[1] / "uv.lock"


def uv_requirement(lock: Path = LOCK) -> str:
    """``uv==<version> --hash=sha256:…`` for every file of that release the lock lists."""
    with lock.open("rb") as file:
        packages = tomllib.load(file)["package"]
    [uv] = [package for package in packages if package["name"] == "uv"]
    files = [uv["sdist"], *uv.get("wheels", [])] if "sdist" in uv else uv.get("wheels", [])
    hashes = " ".join(f"--hash={file['hash']}" for file in files)
    return f"uv=={uv['version']} {hashes}"


if __name__ == "__main__":
    sys.stdout.write(uv_requirement() + "\n")
