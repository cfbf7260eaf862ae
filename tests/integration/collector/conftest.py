"""Fixtures for collector tests over real Kafka and Redis."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from collector.runtime import get_ingestor
from footfall.config import Config
from footfall.models import Site
from tests.integration.kafka_tail import TopicTail


@pytest.fixture
def site(db: None) -> Site:
    """A fresh site (unique id) whose pages live on example.com."""
    site = Site.objects.create(
        site_id=f"t-{uuid.uuid4().hex[:10]}", name="Test", domains=["example.com", "www.example.com"]
    )
    get_ingestor().sites.invalidate()
    return site


@pytest.fixture
def events_tail(cfg: Config) -> Iterator[TopicTail]:
    tail = TopicTail(cfg, cfg.events_topic)
    yield tail
    tail.close()
