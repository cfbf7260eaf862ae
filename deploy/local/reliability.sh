#!/usr/bin/env bash
# The reliability suite at full size: starts a throw-away stack on its own ports (like
# test.sh), runs tests/reliability with FOOTFALL_RELIABILITY=full, prints the results table
# and writes it into docs/reliability.md. Takes about an hour (the soak alone is 30 minutes).
# Extra arguments go to pytest, e.g. deploy/local/reliability.sh -k worker_crashes.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
venv=$(deploy/local/bootstrap.sh | tail -n 1)
py="$venv/bin/python"

export FOOTFALL_STATE_DIR=${FOOTFALL_RELIABILITY_STATE_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/footfall-reliability.XXXXXX")}
export FOOTFALL_KAFKA_PORT=${FOOTFALL_RELIABILITY_KAFKA_PORT:-49092}
export FOOTFALL_REDIS_PORT=${FOOTFALL_RELIABILITY_REDIS_PORT:-46379}
export FOOTFALL_REDIS_SHARDS_PORT=${FOOTFALL_RELIABILITY_REDIS_SHARDS_PORT:-46380}  # three ports: 46380-46382
export FOOTFALL_MONGO_PORT=${FOOTFALL_RELIABILITY_MONGO_PORT:-47117}
export FOOTFALL_WEB_PORT=${FOOTFALL_RELIABILITY_WEB_PORT:-48000}
export FOOTFALL_RELIABILITY=full FOOTFALL_FUZZ_EXAMPLES=${FOOTFALL_FUZZ_EXAMPLES:-1500}

cleanup() {
  status=$?
  "$py" -m deploy.local.stack stop || status=1
  [ -n "${FOOTFALL_RELIABILITY_STATE_DIR:-}" ] || rm -rf "$FOOTFALL_STATE_DIR"
  exit $status
}
trap cleanup EXIT

"$py" -m deploy.local.stack start redis redis-shards mongo kafka spark chromium spark-cluster
eval "$("$py" -m deploy.local.stack env)"
status=0
"$py" -m pytest tests/reliability -m reliability -p no:cacheprovider "$@" || status=$?
"$py" -m tests.reliability.report --scale full --write docs/reliability.md
exit $status
