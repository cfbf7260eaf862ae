"""Fixtures of the Kafka security tests: a SASL_SSL broker of their own, and topics on it."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from footfall.config import Config, load_config
from footfall.kafka_topics import admin_client, ensure_topics, wanted_topics
from tests.integration.security.secure_broker import SecureBroker, secure_port

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureBroker]:
    """The SASL_SSL broker, started once for these tests and stopped after them."""
    secure = SecureBroker(tmp_path_factory.mktemp("secure-kafka"), secure_port(os.environ))
    try:
        secure.start()
        yield secure
    finally:
        secure.stop()


@dataclass(frozen=True)
class Secured:
    """A configuration pointed at the secure broker, with fresh topics and archive."""

    env: dict[str, str]
    cfg: Config

    def with_env(self, **changes: str) -> dict[str, str]:
        return {**self.env, **changes}


@pytest.fixture
def secured(broker: SecureBroker, tmp_path: Path) -> Secured:
    """Fresh events topics on the secure broker, made by the topic code ``kafka_topics`` runs."""
    topic = f"sec-{uuid.uuid4().hex[:10]}"
    env = {
        **os.environ,
        **broker.security(),
        "FOOTFALL_EVENTS_TOPIC": topic,
        "FOOTFALL_INVALID_TOPIC": f"{topic}.invalid",
        "FOOTFALL_EVENTS_PARTITIONS": "3",
        "ARCHIVE_URL": (tmp_path / "archive").as_uri(),
    }
    cfg = load_config(env, REPO)
    report = ensure_topics(admin_client(cfg), wanted_topics(cfg))
    assert sorted(report.created) == [topic, f"{topic}.invalid"]
    return Secured(env, cfg)
