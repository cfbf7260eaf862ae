#!/usr/bin/env bash
# Creates the project's virtualenv (once) and installs Footfall (the server, with every extra
# the test tools and the local stack's supervisord, and the capture library in host/ it depends on) into it. Prints the virtualenv's path on its last line.
# The virtualenv lives outside the checkout (FOOTFALL_CACHE_DIR, default ~/.cache/footfall),
# so a fresh clone reuses it; a changed pyproject.toml or checkout path re-runs pip.
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
stamp="$venv/.footfall-$( (cat "$repo/pyproject.toml" "$repo/host/pyproject.toml"; echo "$repo") | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  echo "bootstrap: installing Python dependencies into $venv" >&2
  "$venv/bin/python" -m pip install --quiet --upgrade pip >&2
  "$venv/bin/python" -m pip install --quiet -e "$repo/host" -e "$repo[all,test,bench,local]" >&2
  rm -f "$venv"/.footfall-*
  touch "$stamp"
fi
echo "$venv"
