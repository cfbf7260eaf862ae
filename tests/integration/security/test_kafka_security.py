"""Kafka over TLS + SASL against a real broker: events flow, refusals are named, nothing is lost."""

from __future__ import annotations

import logging
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import redis
from confluent_kafka import Consumer, TopicPartition

from footfall.config import Config, load_config
from footfall.demo import DemoTraffic
from footfall.kafka_client import consumer_config
from footfall_capture.events import Event, decode
from footfall_capture.sink import COLLECTOR_PRODUCER, KafkaSink
from footfall_capture.spool import Spool
from realtime.keys import KeyLayout
from realtime.reads import RealtimeQueries
from realtime.store import CounterStore
from tests.integration.realtime.conftest import wait_consumed
from tests.integration.security.conftest import REPO, Secured
from tests.integration.security.secure_broker import SecureBroker

N = 300


def page_views(site: str, n: int = N) -> list[Event]:
    now = int(time.time() * 1000)
    gen = DemoTraffic(site_id=site, visitors=50, seed=3)
    return [gen.event(now - 600_000 + i * 1000) for i in range(n)]


def topic_ids(cfg: Config, timeout: float = 60.0) -> list[str]:
    """Every event id on the events topic, from the beginning."""
    consumer = Consumer(consumer_config(cfg, f"audit-{uuid.uuid4().hex}"))
    topic = cfg.events_topic
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in partitions}
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        ids: list[str] = []
        done = {p: end == 0 for p, end in ends.items()}
        deadline = time.monotonic() + timeout
        while not all(done.values()) and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            ids.append(decode(msg.value()).event_id)
            done[msg.partition()] = msg.offset() + 1 >= ends[msg.partition()]
        return ids
    finally:
        consumer.close()


def archived_ids(cfg: Config, site: str) -> list[str]:
    root = Path(cfg.archive_url.removeprefix("file://")) / "events" / f"site_id={site}"
    return [
        i
        for f in sorted(root.rglob("part-*.parquet"))  # not the archiver's .tmp-part-* files, renamed any time
        for i in pq.read_table(f, columns=["event_id"])["event_id"].to_pylist()
    ]


def manage(command: str, env: dict[str, str], *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "manage.py", command, *args], cwd=REPO, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def test_events_flow_to_worker_and_archiver_over_sasl_ssl(secured: Secured, tmp_path: Path) -> None:
    """The collector's sink (PLAIN) → SASL_SSL broker → a realtime worker and the archiver (SCRAM-SHA-512):
    every event counted and archived once."""
    site = f"sec-{uuid.uuid4().hex[:8]}"
    events = page_views(site)
    plain = load_config(secured.with_env(KAFKA_SASL_MECHANISM="PLAIN"), REPO)
    sink = KafkaSink(plain.kafka, Spool(tmp_path / "spool", 16 << 20), **COLLECTOR_PRODUCER)
    assert {sink.send(e) for e in events} == {"queued"}
    assert sink.flush(30) == 0
    sink.close()
    assert sink.stats["spooled"] == 0

    topic, group = secured.cfg.events_topic, f"rt-{secured.cfg.events_topic}"
    workers = [
        manage("run_realtime", secured.env, "--topic", topic, "--group", group, "--batch-time", "0.2"),
        manage("run_archiver", secured.env, "--topic", topic, "--group", f"arch-{topic}", "--batch-time", "1"),
    ]
    try:
        store = CounterStore(redis.Redis.from_url(secured.cfg.redis_url), KeyLayout())
        consumer = Consumer(consumer_config(secured.cfg, group))
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in partitions}
        consumer.close()
        assert sum(ends.values()) == N
        wait_consumed(store, group, topic, ends, timeout=120)
        deadline = time.monotonic() + 120
        while len(set(archived_ids(secured.cfg, site))) < N and time.monotonic() < deadline:
            time.sleep(0.5)
    finally:
        for proc in workers:
            stop(proc)
    start, end = min(e.ts for e in events) // 60_000 * 60_000, max(e.ts for e in events) + 60_000
    assert RealtimeQueries(store).totals(site, start, end)["pageviews"] == N
    assert set(archived_ids(secured.cfg, site)) == {e.event_id for e in events}


def test_wrong_password_is_named_and_nothing_is_lost(
    secured: Secured, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A sink with a wrong password logs which settings to fix and spools; with the right
    password configured, the spool's replay delivers every event accepted meanwhile."""
    caplog.set_level(logging.ERROR, logger="footfall_capture.sink")
    wrong = load_config(secured.with_env(KAFKA_SASL_PASSWORD="not-the-password"), REPO)
    events = page_views(f"sec-{uuid.uuid4().hex[:8]}", 50)
    sink = KafkaSink(wrong.kafka, Spool(tmp_path / "spool", 16 << 20), **{"message.timeout.ms": 5000})
    answers = [sink.send(e) for e in events]
    assert set(answers) <= {"queued", "spooled"}
    deadline = time.monotonic() + 60
    while sink.stats["spooled"] < len(events) and time.monotonic() < deadline:
        time.sleep(0.2)
    sink.close()
    assert sink.stats["spooled"] == len(events)
    assert sink.stats["lost"] == 0
    assert "Kafka authentication failed (KAFKA_SASL_USERNAME/KAFKA_SASL_PASSWORD" in caplog.text
    assert topic_ids(secured.cfg) == []

    fixed = KafkaSink(secured.cfg.kafka, Spool(tmp_path / "spool", 16 << 20))
    assert fixed.replay() == len(events)
    assert sorted(topic_ids(secured.cfg)) == sorted(e.event_id for e in events)


@pytest.mark.parametrize(
    ("command", "change", "named"),
    [
        ("run_realtime", {"KAFKA_SASL_PASSWORD": "not-the-password"}, "KAFKA_SASL_USERNAME/KAFKA_SASL_PASSWORD"),
        ("run_archiver", {"KAFKA_SSL_CA_LOCATION": "other"}, "Kafka TLS handshake failed (KAFKA_SSL_CA_LOCATION"),
    ],
)
def test_refused_worker_exits_naming_the_setting(
    secured: Secured, broker: SecureBroker, command: str, change: dict[str, str], named: str
) -> None:
    """A worker refused by the brokers (wrong password, untrusted CA) exits with an error naming the setting."""
    if change.get("KAFKA_SSL_CA_LOCATION") == "other":
        change = {"KAFKA_SSL_CA_LOCATION": str(broker.certs.other_ca)}
    proc = manage(command, secured.with_env(**change), "--topic", secured.cfg.events_topic)
    try:
        _, stderr = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            stop(proc)
    assert proc.returncode != 0
    assert named in stderr, stderr[-2000:]
