#!/usr/bin/env bash
# Stops Footfall's processes and the local stack; leaves no process behind. Data is kept
# in the state directory (delete it to start from nothing).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
venv=$(deploy/local/bootstrap.sh | tail -n 1)
exec "$venv/bin/python" -m deploy.local.stack stop
