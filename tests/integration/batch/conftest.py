"""Fixtures of the batch tests."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator
from pathlib import Path

import pymongo
import pytest

from footfall.config import Config


@pytest.fixture
def batch_cfg(cfg: Config, tmp_path: Path) -> Iterator[Config]:
    """The configuration with a private archive directory and Mongo database."""
    name = f"test_{uuid.uuid4().hex[:10]}"
    yield dataclasses.replace(cfg, archive_url=(tmp_path / "archive").as_uri(), mongo_db=name)
    client: pymongo.MongoClient = pymongo.MongoClient(cfg.mongo_url)
    client.drop_database(name)
    client.close()
