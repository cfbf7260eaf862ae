#!/usr/bin/env bash
# The test command: installs what is missing, starts a throw-away stack on its own ports
# and state directory (so it never touches a running demo), runs ruff, Django's checks and
# the whole pytest suite against the real services, then stops the stack.
# Without arguments: the pure tests, then the integration tests, each printing its slowest.
# Extra arguments make one pytest run of exactly them, e.g. deploy/local/test.sh tests/unit.
# FOOTFALL_TEST_SERVICES narrows the services started for a focused run (e.g. "redis mongo
# kafka" for tests needing only those); FOOTFALL_TEST_INSTALL="" skips installing the Spark
# cluster and MinIO, which the tests using them start (tests/integration/conftest.py).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
venv=$(deploy/local/bootstrap.sh | tail -n 1)
py="$venv/bin/python"
# The tests that install the server's wheel with uv trust the machine's certificate store, as pip does.
export UV_SYSTEM_CERTS=1

export FOOTFALL_STATE_DIR=${FOOTFALL_TEST_STATE_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/footfall-test.XXXXXX")}
export FOOTFALL_KAFKA_PORT=${FOOTFALL_TEST_KAFKA_PORT:-29092}
export FOOTFALL_REDIS_PORT=${FOOTFALL_TEST_REDIS_PORT:-26379}
export FOOTFALL_REDIS_SHARDS_PORT=${FOOTFALL_TEST_REDIS_SHARDS_PORT:-26380}  # three ports: 26380-26382
export FOOTFALL_MONGO_PORT=${FOOTFALL_TEST_MONGO_PORT:-27117}
export FOOTFALL_WEB_PORT=${FOOTFALL_TEST_WEB_PORT:-28000}
export FOOTFALL_MINIO_PORT=${FOOTFALL_TEST_MINIO_PORT:-29000}

# The whole run's integration tests are two pytest sessions side by side, each on a stack of its
# own: the fault scenarios kill and restart their stack's services, so they, with other tests
# that bring servers of their own (the Kafka cluster, S3, host sites and their collector), run
# on a second stack, on ports 100 above the first's. The two halves take about as long
# (docs/testing.md): the server wheel's test, which stops nothing, runs on the first, and so
# does the collector's capacity test (tests/integration/collector), which stops its stack's
# Mongo and Redis for seconds each and starts them again before the next test.
SECOND_STACK_TESTS=(tests/reliability tests/integration/cluster tests/integration/archive_s3
                    tests/integration/packaging/test_host_package.py tests/integration/batch/test_moving_data.py
                    tests/integration/batch/test_archive_lock.py)
second_dir="$FOOTFALL_STATE_DIR/second-stack"
on_second_stack() {
  ( export FOOTFALL_STATE_DIR="$second_dir" FOOTFALL_KAFKA_PORT=$((FOOTFALL_KAFKA_PORT + 100)) \
      FOOTFALL_REDIS_PORT=$((FOOTFALL_REDIS_PORT + 100)) FOOTFALL_REDIS_SHARDS_PORT=$((FOOTFALL_REDIS_SHARDS_PORT + 100)) \
      FOOTFALL_MONGO_PORT=$((FOOTFALL_MONGO_PORT + 100)) FOOTFALL_WEB_PORT=$((FOOTFALL_WEB_PORT + 100)) \
      FOOTFALL_MINIO_PORT=$((FOOTFALL_MINIO_PORT + 100))
    eval "$("$py" -m deploy.local.stack env)"
    "$@" )
}

cleanup() {
  status=$?
  # A start still running in the background (a check failed early) ends before the stop.
  [ -z "${services:-}" ] || { pkill -P "$services" 2>/dev/null; kill "$services" 2>/dev/null; wait "$services" 2>/dev/null; } || true
  # So does the second half of the tests (the run was interrupted).
  [ -z "${second:-}" ] || { pkill -P "$second" 2>/dev/null; kill "$second" 2>/dev/null; wait "$second" 2>/dev/null; } || true
  [ ! -d "$second_dir" ] || on_second_stack "$py" -m deploy.local.stack stop || status=1
  "$py" -m deploy.local.stack stop || status=1
  [ -n "${FOOTFALL_TEST_STATE_DIR:-}" ] || rm -rf "$FOOTFALL_STATE_DIR"
  exit $status
}
trap cleanup EXIT

started=$(date +%s)
# The services start in the background while ruff, the import contracts, pylint and the pure
# tests run; the Spark cluster and MinIO are only installed here (MinIO's first build takes
# minutes): the tests that use them start them (tests/integration/conftest.py).
services_log="$FOOTFALL_STATE_DIR/services.log"
# The deploy material's pure tests read Debian's nginx, openssl and systemd-analyze: installed first.
"$py" -m deploy.local.stack start deploy-tools
install=${FOOTFALL_TEST_INSTALL-spark-cluster minio}
# shellcheck disable=SC2086 # lists of service names
( "$py" -m deploy.local.stack start ${FOOTFALL_TEST_SERVICES:-redis redis-shards mongo kafka spark chromium} \
  && { [ "$#" -gt 0 ] || on_second_stack "$py" -m deploy.local.stack start redis redis-shards mongo kafka; } \
  && { [ -z "$install" ] || "$py" -m deploy.local.stack install $install; } ) >"$services_log" 2>&1 &
services=$!
services_ready() {
  local status=0
  wait "$services" || status=$?
  cat "$services_log"
  [ "$status" -eq 0 ] || { echo "the test stack did not start (exit $status)" >&2; return 1; }
  services=""
  echo "services up in $(( $(date +%s) - started ))s"
}
# Only variables: `stack env` needs no running service.
eval "$("$py" -m deploy.local.stack env)"
# The tests' rollups read days of a few thousand events: a handful of shuffle partitions, not
# Spark's 200 tasks per shuffle (the product's own setting; see docs/batch-layer.md).
export FOOTFALL_SPARK_SHUFFLE_PARTITIONS=${FOOTFALL_SPARK_SHUFFLE_PARTITIONS:-4}

"$py" -m ruff check .
# The code is as `ruff format` writes it (lines kept by hand say `# fmt: skip`).
"$py" -m ruff format --check .
# The architecture's import contracts (pyproject.toml [tool.importlinter]) and repeated code.
"$venv/bin/lint-imports"
"$py" -m pylint --score=n footfall footfall_server collector realtime historical archive spark_jobs query api dashboard alerts \
  host/footfall_capture deploy
"$py" manage.py check
# The static files WhiteNoise serves to the tests' live servers (admin, Swagger UI).
"$py" manage.py collectstatic --noinput -v0

if [ "$#" -gt 0 ]; then  # a focused run: exactly the pytest arguments given
  services_ready
  "$py" -m pytest "$@"
  exit
fi
# The pure tier (no service) while the last services start, then everything that needs them.
# Each prints its slowest tests (pyproject.toml: --durations). The pure tier runs on three
# pytest-xdist workers (each starts its own Spark session for the Spark tests it gets): a Spark
# test waits on its JVM a third of the time, and a third worker took 228 s down to 200 s on
# the 2 vCPUs of 2026-11-29 (running it beside the integration tests instead cost them more
# than it saved: they are CPU-bound).
pure=0
"$py" -m pytest -m "not integration" -n 3 || pure=$?
services_ready
# The second stack's half runs in the background, its output kept for after the first half's.
second_log="$FOOTFALL_STATE_DIR/second-stack-tests.log"
on_second_stack "$py" -m pytest -m integration --basetemp "$second_dir/pytest" "${SECOND_STACK_TESTS[@]}" \
  >"$second_log" 2>&1 &
second=$!
first=0
ignore=()
for path in "${SECOND_STACK_TESTS[@]}"; do ignore+=(--ignore "$path"); done
"$py" -m pytest -m integration "${ignore[@]}" || first=$?
echo "integration tests on the first stack: exit $first; the second stack's tests:"
wait "$second" || second_status=$?
second=""
cat "$second_log"
echo "pure tests: exit $pure; integration tests: exit $first on the first stack, exit ${second_status:-0} on the" \
  "second; $(( $(date +%s) - started ))s in all"
[ "$pure" -eq 0 ] && [ "$first" -eq 0 ] && [ "${second_status:-0}" -eq 0 ]
