#!/usr/bin/env bash
# The test command: installs what is missing, starts a throw-away stack on its own ports
# and state directory (so it never touches a running demo), runs ruff, Django's checks and
# the whole pytest suite against the real services, then stops the stack.
# Extra arguments go to pytest, e.g. deploy/local/test.sh -m "not integration".
# FOOTFALL_TEST_SERVICES narrows the services started for a focused run (e.g. "redis mongo
# kafka" for tests needing only those); unset, the whole stack starts, as the full suite needs.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
venv=$(deploy/local/bootstrap.sh | tail -n 1)
py="$venv/bin/python"

export FOOTFALL_STATE_DIR=${FOOTFALL_TEST_STATE_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/footfall-test.XXXXXX")}
export FOOTFALL_KAFKA_PORT=${FOOTFALL_TEST_KAFKA_PORT:-29092}
export FOOTFALL_REDIS_PORT=${FOOTFALL_TEST_REDIS_PORT:-26379}
export FOOTFALL_REDIS_SHARDS_PORT=${FOOTFALL_TEST_REDIS_SHARDS_PORT:-26380}  # three ports: 26380-26382
export FOOTFALL_MONGO_PORT=${FOOTFALL_TEST_MONGO_PORT:-27117}
export FOOTFALL_WEB_PORT=${FOOTFALL_TEST_WEB_PORT:-28000}
export FOOTFALL_MINIO_PORT=${FOOTFALL_TEST_MINIO_PORT:-29000}

cleanup() {
  status=$?
  "$py" -m deploy.local.stack stop || status=1
  [ -n "${FOOTFALL_TEST_STATE_DIR:-}" ] || rm -rf "$FOOTFALL_STATE_DIR"
  exit $status
}
trap cleanup EXIT

started=$(date +%s)
# shellcheck disable=SC2086 # a list of service names
"$py" -m deploy.local.stack start ${FOOTFALL_TEST_SERVICES:-redis redis-shards mongo kafka spark chromium spark-cluster minio deploy-tools}
eval "$("$py" -m deploy.local.stack env)"
echo "services up in $(( $(date +%s) - started ))s"
# The tests' rollups read days of a few thousand events: a handful of shuffle partitions, not
# Spark's 200 tasks per shuffle (the product's own setting; see the README).
export FOOTFALL_SPARK_SHUFFLE_PARTITIONS=${FOOTFALL_SPARK_SHUFFLE_PARTITIONS:-4}

"$py" -m ruff check .
# The architecture's import contracts (pyproject.toml [tool.importlinter]) and repeated code.
"$venv/bin/lint-imports"
"$py" -m pylint --score=n footfall collector realtime historical archive spark_jobs query api dashboard alerts \
  host/footfall_capture deploy
"$py" manage.py check
# The static files WhiteNoise serves to the tests' live servers (admin, Swagger UI).
"$py" manage.py collectstatic --noinput -v0
"$py" -m pytest "$@"
