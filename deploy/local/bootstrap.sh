#!/usr/bin/env bash
# Creates the project's virtualenv (once) and installs exactly what uv.lock pins into it:
# Footfall (the server with every extra, and the capture library in host/, both editable),
# the test tools, the local stack's supervisord, and the installers themselves (uv, pip,
# setuptools); then builds the minified browser tracker (npm). Prints the virtualenv's path on
# its last line.
# The virtualenv lives outside the checkout (FOOTFALL_CACHE_DIR, default ~/.cache/footfall),
# so a fresh clone reuses it; a changed uv.lock, pyproject.toml or checkout path re-syncs it.
# uv itself is installed from the lock's hashes (deploy/locked_uv.py), then `uv sync --locked`
# installs the rest: it never resolves anew, so every machine gets the same versions, and it
# removes what the lock does not list. `pip check` confirms the result is consistent.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cache=${FOOTFALL_CACHE_DIR:-$HOME/.cache/footfall}
venv=${FOOTFALL_VENV:-$cache/venv}
python=${PYTHON:-python3}

if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "bootstrap: Footfall needs Python >= 3.11; set PYTHON=/path/to/python3.11+" >&2
  exit 1
fi
mkdir -p "$cache"
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv" || { echo "bootstrap: could not create a virtualenv (apt-get install python3-venv?)" >&2; exit 1; }
fi
stamp="$venv/.footfall-$( (cat "$repo/pyproject.toml" "$repo/host/pyproject.toml" "$repo/uv.lock"; echo "$repo") | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  echo "bootstrap: installing the locked Python dependencies (uv.lock) into $venv" >&2
  "$venv/bin/python" "$repo/deploy/locked_uv.py" > "$venv/uv-requirement.txt"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --require-hashes \
    -r "$venv/uv-requirement.txt" >&2
  # No Python download (this one is used); --locked: a lock behind pyproject.toml is an error, not
  # re-resolved; the machine's certificate store, as pip uses (a proxy's CA, a mirror's).
  UV_PROJECT_ENVIRONMENT="$venv" UV_PYTHON_DOWNLOADS=never UV_SYSTEM_CERTS=1 "$venv/bin/uv" sync --quiet --locked \
    --all-extras --all-groups --project "$repo" >&2 \
    || { echo "bootstrap: uv sync failed (above); after a change to pyproject.toml, run $venv/bin/uv lock" \
              "(docs/dependencies.md)" >&2; exit 1; }
  "$venv/bin/python" -m pip check --disable-pip-version-check >&2
  rm -f "$venv"/.footfall-*
  touch "$stamp"
fi
# The minified browser tracker the collector serves (collector/tracker/), built with npm: installed
# from Debian's packages when missing and run as root, as the stack's other tools are.
if ! command -v npm >/dev/null && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  echo "bootstrap: installing Node.js and npm (Debian packages) to build the tracker" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >&2
fi
(cd "$repo" && "$venv/bin/python" -m deploy.build_tracker) || exit 1
echo "$venv"
