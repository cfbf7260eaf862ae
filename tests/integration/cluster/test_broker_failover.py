"""The three-broker cluster loses the leader of its busiest partition, twice, under load.

Beacons go to ``POST /collect`` of the cluster's web server at a steady rate, each with its
own event id; a 2xx answer makes the id acknowledged. Twice, the node leading the events
topic's busiest partition is SIGKILLed, left down for a while and started again (``stack
start kafka`` returns once every partition is back in sync); writes reach the log while it
is down. Afterwards, with the realtime workers, the archiver and the Spark cluster of the
same topology:

* the archive holds every acknowledged event exactly once after the dedup the rollup and
  compaction apply (the files may hold a copy: a consumer that re-reads after its group
  coordinator died writes a batch again), and nothing that was not sent;
* the realtime page views (Redis, through the query layer) equal the archived page views;
* the rollup on the Spark cluster (``manage.py rollup``, ``SPARK_MASTER=spark://…``) equals
  a recount of the archive, per day: page views, visitors and page views per page.

With no failed request, archived = acknowledged exactly. The archive is on the S3 server
(MinIO) of the same topology, written by the archiver and read by the Spark workers through
``s3a://``; ``FOOTFALL_TEST_CLUSTER_ARCHIVE_URL`` puts it elsewhere.
"""

from __future__ import annotations

import datetime as dt
import http.client
import json
import threading
import time
import uuid
from collections import Counter, defaultdict

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pymongo
import redis
from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource

from archive.store import Archive, _dedupe
from footfall.config import Config
from footfall_capture.kafka import client_config
from historical.store import BREAKDOWNS, DAILY
from realtime.keys import KeyLayout
from realtime.reads import RealtimeQueries
from realtime.store import CounterStore
from tests.integration.cluster.conftest import LocalCluster
from tests.reliability.faults import wait_for, wait_while_progressing

RATE = 40  # beacons per second, from two threads
UP_S = 8  # load before each kill, and after the last restart
DOWN_S = 10  # how long the killed node stays down (longer than the cluster takes to move leaders)
BOUNCES = 2
PAGES = 12
COLUMNS = ["event_id", "type", "ts", "received_at", "path", "visitor_id", "is_bot"]


class BeaconLoad:
    """Threads posting page-view beacons at a steady rate; each 2xx answer's id is acknowledged."""

    def __init__(self, port: int, site: str, rate: float, threads: int = 2) -> None:
        self.port, self.site, self.rate = port, site, rate
        self.sent: set[str] = set()
        self.acked: set[str] = set()
        self.answers: Counter[str] = Counter()  # "202 queued", "202 spooled", "503", "error"
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(i, threads), daemon=True) for i in range(threads)]

    def __enter__(self) -> BeaconLoad:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(30)

    def _run(self, index: int, threads: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=15)
        t0, i = time.monotonic(), 0
        while not self._stop.is_set():
            time.sleep(max(0.0, t0 + i * threads / self.rate - time.monotonic()))
            n = i * threads + index
            event_id = str(uuid.uuid4())
            body = json.dumps(
                {"site_id": self.site, "event_id": event_id, "url": f"https://cluster.example/p{n % PAGES}"}
            )
            # Fifty user agents: fifty visitors (all requests come from one address).
            agent = f"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/131.0.{n % 50}.0 Safari/537.36"
            with self._lock:
                self.sent.add(event_id)
            try:
                conn.request("POST", "/collect", body, {"Content-Type": "text/plain", "User-Agent": agent})
                resp = conn.getresponse()
                answer = json.loads(resp.read() or b"{}")
            except (OSError, http.client.HTTPException, ValueError):
                conn.close()
                answer, resp = {}, None
            with self._lock:
                if resp is not None and 200 <= resp.status < 300 and answer.get("event_id") == event_id:
                    self.acked.add(event_id)
                    self.answers[f"{resp.status} {answer.get('status')}"] += 1
                else:
                    self.answers[str(resp.status) if resp is not None else "error"] += 1
            i += 1
        conn.close()

    @property
    def acked_count(self) -> int:
        with self._lock:
            return len(self.acked)


def read_archive(cfg: Config, site: str) -> pa.Table:
    """Every archived row of ``site`` (copies included), through the archive's filesystem."""
    archive = Archive.from_config(cfg)
    folder = f"{archive.root_path}/site_id={site}"
    if archive.fs.get_file_info(folder).type == pafs.FileType.NotFound:
        return pa.table({c: [] for c in COLUMNS})
    return ds.dataset(folder, filesystem=archive.fs, format="parquet").to_table(columns=COLUMNS)


def log_ends(cfg: Config) -> dict[int, int]:
    """Each events partition's end offset (quiet: a node may be down). A leader elected a
    moment ago answers "high watermark not caught up" for a while: asked again."""
    consumer = Consumer(client_config(cfg.kafka, **{"group.id": "probe", "log_level": 0}))

    def end(partition: int) -> int:
        deadline = time.monotonic() + 60
        while True:
            try:
                return consumer.get_watermark_offsets(TopicPartition(cfg.events_topic, partition), timeout=10)[1]
            except KafkaException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    try:
        return {
            p: end(p) for p in consumer.list_topics(cfg.events_topic, timeout=10).topics[cfg.events_topic].partitions
        }
    finally:
        consumer.close()


def busiest_leader(cfg: Config) -> tuple[int, int]:
    """The events topic's partition with the most messages, and the node that leads it."""
    ends = log_ends(cfg)
    partition = max(ends, key=lambda p: ends[p])
    return partition, leader(cfg, partition)


def leader(cfg: Config, partition: int) -> int:
    # Quiet: its connection errors to the node just killed are expected.
    admin = AdminClient({"bootstrap.servers": cfg.kafka_bootstrap_servers, "log_level": 0})
    return admin.list_topics(cfg.events_topic, timeout=10).topics[cfg.events_topic].partitions[partition].leader


def recount(table: pa.Table) -> dict[str, dict]:
    """Per UTC day (the site's zone): page views, visitors and page views per page, of humans."""
    days: dict[str, dict] = defaultdict(lambda: {"pageviews": 0, "visitors": set(), "pages": Counter()})
    for row in table.to_pylist():
        if row["is_bot"]:
            continue
        day = days[dt.datetime.fromtimestamp(row["ts"] / 1000, dt.UTC).date().isoformat()]
        day["visitors"].add(row["visitor_id"])
        if row["type"] == "pageview":
            day["pageviews"] += 1
            day["pages"][row["path"]] += 1
    return {d: {**v, "visitors": len(v["visitors"])} for d, v in days.items()}


def test_topics_have_three_replicas_and_two_in_sync(cluster: LocalCluster) -> None:
    """Every partition of the events and invalid-events topics is on all three nodes, and a
    write needs two of them (with the producers' acks=all)."""
    cfg = cluster.cfg
    admin = AdminClient({"bootstrap.servers": cfg.kafka_bootstrap_servers})
    metadata = admin.list_topics(timeout=10)
    assert len(metadata.brokers) == 3
    for topic in (cfg.events_topic, cfg.invalid_topic):
        assert all(len(p.replicas) == 3 for p in metadata.topics[topic].partitions.values()), topic
        resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
        assert admin.describe_configs([resource])[resource].result(timeout=30)["min.insync.replicas"].value == "2"


def test_leader_kill_9_twice_loses_nothing_acknowledged(cluster: LocalCluster) -> None:
    cfg = cluster.cfg
    site = f"cl-{uuid.uuid4().hex[:8]}"
    cluster.manage("create_site", site, "--name", "Cluster test", "--domain", "cluster.example")
    started_ms = int(time.time() * 1000)
    kills: list[str] = []
    with BeaconLoad(cluster.web_port, site, RATE) as load:
        wait_for(lambda: load.acked_count > 0, 60, "the first acknowledged beacon")
        for _ in range(BOUNCES):
            time.sleep(UP_S)
            partition, node = busiest_leader(cfg)
            cluster.stack("kill", f"kafka-broker-{node}")
            wait_for(
                lambda p=partition, n=node: leader(cfg, p) not in (n, -1), 60, f"a new leader of partition {partition}"
            )
            acked_before, logged_before = load.acked_count, sum(log_ends(cfg).values())
            time.sleep(DOWN_S)
            logged = sum(log_ends(cfg).values()) - logged_before
            kills.append(
                f"node {node} led partition {partition}; while down {load.acked_count - acked_before} "
                f"acknowledged, {logged} written to the log"
            )
            assert logged > 0, f"no write reached the log while node {node} was down"
            cluster.stack("start", "kafka")
        time.sleep(UP_S)
    sent, acked, answers = load.sent, load.acked, load.answers
    failed = len(sent) - len(acked)
    assert len(acked) >= RATE * UP_S, f"too little load to prove anything: {answers}"

    # The archiver and the collector's spool replay catch up; then the archive is the truth.
    wait_while_progressing(lambda: len(acked - set(read_archive(cfg, site)["event_id"].to_pylist())), 180, "archive")
    table = read_archive(cfg, site)
    files = Counter(table["event_id"].to_pylist())
    deduped = _dedupe(table)
    archived = deduped["event_id"].to_pylist()
    assert acked <= set(files), f"{len(acked - set(files))} acknowledged events are not in the archive"
    assert set(files) <= sent, "the archive holds events nobody sent"
    if failed == 0:
        assert set(archived) == acked

    # Realtime page views through the query layer equal the archive's.
    store = CounterStore(redis.Redis.from_url(cfg.redis_url), KeyLayout())
    queries = RealtimeQueries(store)
    end_ms = (int(time.time() * 1000) // 60_000 + 1) * 60_000

    def realtime_behind() -> int:
        return len(archived) - queries.totals(site, started_ms // 60_000 * 60_000, end_ms)["pageviews"]

    wait_while_progressing(realtime_behind, 180, "realtime counters")
    assert realtime_behind() == 0, "the realtime counters counted an event twice"

    # The rollup on the Spark cluster equals a recount of the archive.
    truth = recount(deduped)
    first, last = min(truth), max(truth)
    cluster.manage("rollup", "--from", first, "--to", last, "--site", site, "--no-progress")
    client: pymongo.MongoClient = pymongo.MongoClient(cfg.mongo_url)
    try:
        db = client[cfg.mongo_db]
        for day, want in truth.items():
            doc = db[DAILY].find_one({"_id": f"{site}|{day}"})
            assert doc is not None, day
            assert (doc["pageviews"], doc["visitors"]) == (want["pageviews"], want["visitors"]), day
            pages = {
                d["value"]: d["pageviews"]
                for d in db[BREAKDOWNS].find({"site_id": site, "day": day, "dimension": "page"})
            }
            assert pages == dict(want["pages"]), day
    finally:
        client.close()
    print(
        f"cluster failover: sent {len(sent)}, acknowledged {len(acked)} ({dict(answers)}), "
        f"archived {len(archived)} ({sum(files.values()) - len(files)} copies in the files); kills: {kills}"
    )
