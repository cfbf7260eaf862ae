"""A host site's Kafka user (``manage.py kafka_host_user``) against a broker that enforces ACLs:
its producer delivers to the events topic and it is refused everything else."""

from __future__ import annotations

import secrets
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from footfall_capture.kafka import KafkaSettings, client_config, producer_config
from footfall_capture.kafka_security import KafkaSecurity
from footfall_capture.sink import KafkaSink
from footfall_capture.spool import Spool
from tests.integration.security.conftest import REPO, Secured
from tests.integration.security.secure_broker import SecureBroker
from tests.integration.security.test_kafka_security import page_views, topic_ids

REFUSED = {KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.GROUP_AUTHORIZATION_FAILED,
           KafkaError.CLUSTER_AUTHORIZATION_FAILED}  # fmt: skip


def kafka_host_user(secured: Secured, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "manage.py", "kafka_host_user", *args], cwd=REPO, env=secured.env,
                          input=stdin, capture_output=True, text=True, timeout=120)  # fmt: skip


def delivery_error(settings: KafkaSettings, topic: str) -> KafkaError | None:
    """Produce one message to ``topic`` as ``settings``' user; the delivery's error, if any."""
    producer = Producer(producer_config(settings, **{"message.timeout.ms": 15_000}))
    reports: list[KafkaError | None] = []
    producer.produce(topic, b"{}", on_delivery=lambda err, _msg: reports.append(err))
    producer.flush(30)
    [report] = reports
    return report


def consumer_error(settings: KafkaSettings, topic: str) -> KafkaError:
    """The first broker refusal a consumer of ``topic`` in a group of its own meets as
    ``settings``' user: in a message's error or through the client's error callback."""
    errors: list[KafkaError] = []
    group = {"group.id": f"g-{uuid.uuid4().hex[:6]}", "auto.offset.reset": "earliest", "error_cb": errors.append}
    consumer = Consumer(client_config(settings, **group))
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error():
                errors.append(msg.error())
            elif msg is not None:
                raise AssertionError("the host user read an event")
            refusals = [e for e in errors if e.code() in REFUSED]
            if refusals:
                return refusals[0]
        raise AssertionError(f"the consumer met no refusal in 30 s, only {errors}")
    finally:
        consumer.close()


def test_a_host_user_writes_events_and_is_refused_everything_else(
    secured: Secured, broker: SecureBroker, tmp_path: Path
) -> None:
    user, password = f"host-{uuid.uuid4().hex[:6]}", secrets.token_urlsafe(24)
    made = kafka_host_user(secured, user, "--password-file", "-", stdin=password)
    assert made.returncode == 0, made.stderr
    assert f"{user} may write to {secured.cfg.events_topic} and nothing else" in made.stdout
    security = KafkaSecurity("SASL_SSL", "SCRAM-SHA-512", user, password, ca_location=str(broker.certs.ca))
    host = KafkaSettings(broker.bootstrap, secured.cfg.events_topic, secured.cfg.invalid_topic, security)

    # Its job, through the host's own sink (idempotent, acks=all): every event delivered.
    events = page_views(f"acl-{uuid.uuid4().hex[:6]}", 20)
    sink = KafkaSink(host, Spool(tmp_path / "spool", 16 << 20), **{"message.timeout.ms": 15_000})
    assert {sink.send(e) for e in events} == {"queued"}
    assert sink.flush(30) == 0
    sink.close()
    assert (sink.stats["delivery_failed"], sink.stats["spooled"]) == (0, 0)
    assert {e.event_id for e in events} <= set(topic_ids(secured.cfg))

    # Everything else is refused: another topic, reading in a consumer group, creating a topic.
    assert delivery_error(host, secured.cfg.invalid_topic).code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert consumer_error(host, secured.cfg.events_topic).code() in REFUSED
    admin = AdminClient(client_config(host))  # held: a client collected mid-request fails it (_DESTROY)
    created = admin.create_topics([NewTopic(f"x-{uuid.uuid4().hex[:6]}", 1, 1)])
    with pytest.raises(KafkaException) as refused:
        next(iter(created.values())).result(timeout=30)
    assert refused.value.args[0].code() in REFUSED

    # Removed, it cannot even sign in.
    removed = kafka_host_user(secured, user, "--remove")
    assert removed.returncode == 0, removed.stderr
    assert "and 1 ACL(s)" in removed.stdout
    assert delivery_error(host, secured.cfg.events_topic) is not None


def test_a_short_or_missing_password_is_refused_with_a_clear_error(secured: Secured, tmp_path: Path) -> None:
    short = kafka_host_user(secured, "host-short", "--password-file", "-", stdin="too-short")
    assert short.returncode == 1
    assert "at least 16 are needed" in short.stderr
    missing = kafka_host_user(secured, "host-missing", "--password-file", str(tmp_path / "nowhere"))
    assert missing.returncode == 1
    assert "--password-file:" in missing.stderr
