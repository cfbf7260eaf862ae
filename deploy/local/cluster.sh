#!/usr/bin/env bash
# Several nodes on one machine, as separate processes under the stack's supervisord: three
# Kafka nodes in KRaft mode (each a broker and a controller; topics with three replicas and
# min.insync.replicas=2, producers with acks=all), a Spark standalone master with two
# workers, Redis with an append-only file, the Mongo-wire server, MinIO holding the archive
# (s3://), the web server (collector, API, dashboard), two realtime workers and the archiver.
# Rollups run on the Spark cluster (SPARK_MASTER), its workers reading the archive through
# s3a://. Its own ports and state directory, so it runs beside up.sh's stack.
#
#   deploy/local/cluster.sh up       install what is missing, start everything, say where it is
#   deploy/local/cluster.sh down     stop every process of the cluster (data stays)
#   deploy/local/cluster.sh status   one line per service and process
#   deploy/local/cluster.sh env      export lines pointing Footfall at the cluster (for eval)
#
# Settings: FOOTFALL_CLUSTER_STATE_DIR (default ~/.local/state/footfall-cluster),
# FOOTFALL_CLUSTER_KAFKA_PORT (19192: brokers on 19192, 19194, 19196, each controller on the
# next port; Spark's master on Kafka's + 30), FOOTFALL_CLUSTER_REDIS_PORT (16479),
# FOOTFALL_CLUSTER_MONGO_PORT (17117), FOOTFALL_CLUSTER_WEB_PORT (8100),
# FOOTFALL_CLUSTER_MINIO_PORT (19100), and FOOTFALL_CLUSTER_ARCHIVE_URL (default
# s3://footfall/cluster on the cluster's MinIO; a file:// URL keeps it on this disk).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
case "${1:-}" in
  up|down|status|env) ;;
  *) echo "usage: deploy/local/cluster.sh up|down|status|env" >&2; exit 2 ;;
esac
venv=$(deploy/local/bootstrap.sh | tail -n 1)
py="$venv/bin/python"

export FOOTFALL_STATE_DIR=${FOOTFALL_CLUSTER_STATE_DIR:-$HOME/.local/state/footfall-cluster}
export FOOTFALL_KAFKA_PORT=${FOOTFALL_CLUSTER_KAFKA_PORT:-19192}
export FOOTFALL_REDIS_PORT=${FOOTFALL_CLUSTER_REDIS_PORT:-16479}
export FOOTFALL_MONGO_PORT=${FOOTFALL_CLUSTER_MONGO_PORT:-17117}
export FOOTFALL_WEB_PORT=${FOOTFALL_CLUSTER_WEB_PORT:-8100}
export FOOTFALL_MINIO_PORT=${FOOTFALL_CLUSTER_MINIO_PORT:-19100}
export FOOTFALL_KAFKA_BROKERS=3
# Nothing of another stack leaks in (the stack sets the rest: Kafka, Redis, Mongo, data dir).
unset FOOTFALL_SPARK_PORT FOOTFALL_REDIS_SHARDS_PORT DATABASE_URL CELERY_BROKER_URL FOOTFALL_CACHE_URL ARCHIVE_URL
eval "$("$py" -m deploy.local.stack env)"
export ARCHIVE_URL=${FOOTFALL_CLUSTER_ARCHIVE_URL:-s3://$FOOTFALL_S3_BUCKET/cluster}
export SPARK_MASTER=$FOOTFALL_SPARK_CLUSTER

case "$1" in
  env)
    "$py" -m deploy.local.stack env
    # The stack's own variables too, so `python -m deploy.local.stack …` addresses the cluster.
    for name in FOOTFALL_STATE_DIR FOOTFALL_KAFKA_PORT FOOTFALL_REDIS_PORT FOOTFALL_MONGO_PORT FOOTFALL_MINIO_PORT \
                FOOTFALL_KAFKA_BROKERS SPARK_MASTER ARCHIVE_URL; do
      echo "export $name=$(printf %q "${!name}")"
    done
    ;;
  status) exec "$py" -m deploy.local.stack status ;;
  down) exec "$py" -m deploy.local.stack stop ;;
  up)
    "$py" -m deploy.local.stack start redis mongo kafka spark-cluster minio
    "$py" manage.py migrate --noinput >/dev/null
    "$py" -m deploy.local.stack start-apps web realtime-1 realtime-2 archiver
    cat <<MSG

Footfall runs on a local cluster (state in $FOOTFALL_STATE_DIR).
  Kafka          $KAFKA_BOOTSTRAP_SERVERS  (3 nodes; kill one: $py -m deploy.local.stack kill kafka-broker-2)
  Spark          $SPARK_MASTER  (master + 2 workers; UI http://127.0.0.1:$((FOOTFALL_KAFKA_PORT + 31))/)
  Redis          $REDIS_URL
  Mongo-wire     $MONGO_URL
  Archive        $ARCHIVE_URL  (MinIO at $ARCHIVE_S3_ENDPOINT)
  Collector, API http://127.0.0.1:$FOOTFALL_WEB_PORT/  (create a site: eval "\$(deploy/local/cluster.sh env)"; $py manage.py create_site NAME)
Stop everything: deploy/local/cluster.sh down
MSG
    "$py" -m deploy.local.stack status
    ;;
esac
