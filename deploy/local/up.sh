#!/usr/bin/env bash
# The main job: installs and starts the local stack (Kafka, Redis, Mongo-wire server, Spark),
# prepares the database, starts Footfall's processes with demo traffic, and says where
# everything is. Safe to run again; stop everything with deploy/local/down.sh.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
venv=$(deploy/local/bootstrap.sh | tail -n 1)
py="$venv/bin/python"

"$py" -m deploy.local.stack start redis mongo kafka spark
eval "$("$py" -m deploy.local.stack env)"
"$py" manage.py migrate --noinput >/dev/null
"$py" -m deploy.local.stack start-apps

cat <<MSG

Footfall is running (state in ${FOOTFALL_STATE_DIR:-$HOME/.local/state/footfall}).
  API health     http://127.0.0.1:${FOOTFALL_WEB_PORT}/api/v1/health
  Kafka          ${KAFKA_BOOTSTRAP_SERVERS}  (topics: events, events.invalid)
  Redis          ${REDIS_URL}
  Mongo-wire     ${MONGO_URL}  (FerretDB; production uses MongoDB)
  Demo traffic   flowing into Kafka; see: $py -m deploy.local.stack status
Stop everything: deploy/local/down.sh
MSG
"$py" -m deploy.local.stack status
