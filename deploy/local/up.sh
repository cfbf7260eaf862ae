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
# The demo site and its ingest key (kept, readable by this user only, in the state dir).
"$py" manage.py create_site demo --name "Demo site" --domain demo.footfall.local >/dev/null
# Its goals and a funnel, so the dashboard's conversion panels have something to show.
"$py" manage.py create_goal demo --name Pricing --page /pricing >/dev/null
"$py" manage.py create_goal demo --name "Pro sign-up" --event signup --prop plan --value pro >/dev/null
"$py" manage.py create_goal demo --name Purchase --event purchase --revenue-prop amount --currency-prop currency >/dev/null
"$py" manage.py create_funnel demo --name "Pricing to pro" --step Pricing --step "Pro sign-up" >/dev/null
# Its alert rules and a weekly report. Email goes to files, one per message, under the data
# dir (EMAIL_URL's development default): nothing leaves the machine.
"$py" manage.py create_alert demo --name "Traffic spike" --kind spike --threshold 3 --window 15 \
  --email ops@demo.footfall.local --report weekly >/dev/null
"$py" manage.py create_alert demo --name "Realtime lag" --kind realtime_lag --threshold 120 \
  --email ops@demo.footfall.local >/dev/null
key_file="$FOOTFALL_DATA_DIR/demo-api-key"
if [ ! -s "$key_file" ]; then
  (umask 077; "$py" manage.py create_api_key demo --name demo-traffic --scope ingest --scope read > "$key_file")
fi
FOOTFALL_DEMO_KEY=$(cat "$key_file")
export FOOTFALL_DEMO_KEY
# The dashboard's demo login: user "demo", granted the demo site; its generated password is
# kept (readable by this user only) in the state dir and printed below.
login_file="$FOOTFALL_DATA_DIR/demo-login"
"$py" manage.py dashboard_user demo --site demo --password-file "$login_file" >/dev/null
# Starts the web server after `manage.py collectstatic` (WhiteNoise serves the admin's and
# Swagger UI's files from STATIC_ROOT), then the workers and the demo traffic.
"$py" -m deploy.local.stack start-apps
# Once per state dir: six past days of demo traffic, archived and rolled up, so the API and
# the dashboard have settled history next to the live minutes. Later days settle nightly.
# Two markers, so a failed rollup is retried by the next run without sending the history twice.
sent_marker="$FOOTFALL_DATA_DIR/demo-history-sent"
rolled_marker="$FOOTFALL_DATA_DIR/demo-history-rolled-up"
if [ ! -e "$sent_marker" ]; then
  echo "seeding six days of demo history (once)"
  "$py" manage.py demo_traffic --backfill-days 6 --backfill-only
  date -u +%F > "$sent_marker"
fi
if [ ! -e "$rolled_marker" ]; then
  echo "rolling the demo history up with Spark (once; a minute or two)"
  seeded_on=$(cat "$sent_marker")
  "$py" manage.py rollup --wait-archived 300 --site demo \
    --from "$(date -u -d "$seeded_on - 6 days" +%F)" --to "$(date -u -d "$seeded_on - 1 day" +%F)"
  touch "$rolled_marker"
fi

cat <<MSG

Footfall is running (state in ${FOOTFALL_STATE_DIR:-$HOME/.local/state/footfall}).
  Dashboard      http://127.0.0.1:${FOOTFALL_WEB_PORT}/dashboard/  (user demo, password $(cat "$login_file"))
  API health     http://127.0.0.1:${FOOTFALL_WEB_PORT}/api/v1/health
  Query API      http://127.0.0.1:${FOOTFALL_WEB_PORT}/api/v1/docs  (OpenAPI: /api/v1/schema), e.g.
                 curl -H "Authorization: Bearer \$(cat $key_file)" http://127.0.0.1:${FOOTFALL_WEB_PORT}/api/v1/sites/demo/realtime
  Kafka          ${KAFKA_BOOTSTRAP_SERVERS}  (topics: events, events.invalid)
  Redis          ${REDIS_URL}
  Mongo-wire     ${MONGO_URL}  (mongo-java-server; production uses MongoDB)
  Collector      POST http://127.0.0.1:${FOOTFALL_WEB_PORT}/collect, GET /p.gif, tracker /footfall.js
  Demo traffic   page views for site "demo" through the collector's batch API into Kafka
                 (API key with ingest+read scopes in $key_file)
  Alert email    files under ${FOOTFALL_DATA_DIR}/mail (rules "Traffic spike", "Realtime lag"; a weekly report)
  Sizes, health  $py -m deploy.local.stack status
Stop everything: deploy/local/down.sh
MSG
"$py" -m deploy.local.stack status
