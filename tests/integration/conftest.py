"""Fixtures for integration tests: real clients to the services the stack started.

These tests never skip when a service is missing: a missing service is a failed run
(start the stack with deploy/local/test.sh, which CI does).
"""

from __future__ import annotations

import inspect
import os
import time
import uuid
from collections.abc import Iterator

import pymongo
import pytest
import redis
from confluent_kafka.admin import AdminClient, NewTopic
from playwright.sync_api import Browser

from footfall.config import Config
from footfall_capture.kafka import client_config
from query.health import check_all
from tests.integration.chromium import BrowserThread
from tests.reliability.faults import stack


@pytest.fixture(scope="session", autouse=True)
def services_up(cfg: Config) -> None:
    """Fail fast, with the reason, if a service of the stack is not answering."""
    problems = {name: err for name, err in check_all(cfg).items() if err}
    if problems:
        pytest.fail(f"services not reachable (start them with deploy/local/test.sh): {problems}", pytrace=False)


@pytest.fixture(scope="session")
def spark_cluster() -> Iterator[str]:
    """The stack's Spark standalone cluster (``stack start spark-cluster``): its master's URL.
    Started by the first test that needs it, stopped at the end of the run: few tests use it."""
    stack("start", "spark-cluster", timeout=900)
    yield os.environ["FOOTFALL_SPARK_CLUSTER"]
    stack("stop", "spark-cluster", timeout=900)


@pytest.fixture(scope="session")
def minio() -> Iterator[str]:
    """The stack's S3 server (``stack start minio``): its endpoint. Started by the first test
    that needs it, stopped at the end of the run."""
    stack("start", "minio", timeout=900)
    yield os.environ["ARCHIVE_S3_ENDPOINT"]
    stack("stop", "minio", timeout=900)


@pytest.fixture(scope="session")
def browser_thread() -> Iterator[BrowserThread]:
    thread = BrowserThread()
    yield thread
    thread.close()


@pytest.fixture
def shared_browser(browser_thread: BrowserThread) -> Iterator[Browser]:
    """The run's one Chromium (launched by the first test that asks); a test opens its own
    contexts, which are closed after it. The test's body runs in the browser's thread
    (:func:`pytest_pyfunc_call`)."""
    yield browser_thread.browser()
    browser_thread.close_contexts()


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run the body of a test using ``shared_browser`` in the browser's thread."""
    if "shared_browser" not in pyfuncitem.fixturenames:
        return None
    thread: BrowserThread = pyfuncitem.funcargs["browser_thread"]
    args = {name: pyfuncitem.funcargs[name] for name in inspect.signature(pyfuncitem.obj).parameters}
    thread.run(lambda: pyfuncitem.obj(**args))
    return True


@pytest.fixture
def kafka_admin(cfg: Config) -> AdminClient:
    return AdminClient(client_config(cfg.kafka))


def create_topic(admin: AdminClient, name: str, partitions: int, timeout: float = 30.0) -> None:
    """Create ``name`` and wait until each partition has a leader: a topic created a moment
    ago on a busy broker answers "not leader" for a while, which a consumer's first offset
    lookup (arroyo's, at assignment) does not retry."""
    admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])[name].result(timeout=30)
    deadline = time.monotonic() + timeout
    while True:
        topic = admin.list_topics(name, timeout=10).topics.get(name)
        ready = topic is not None and topic.error is None and len(topic.partitions) == partitions
        if ready and all(p.leader >= 0 and p.error is None for p in topic.partitions.values()):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"topic {name}: no leader for every partition within {timeout:.0f}s")
        time.sleep(0.2)


@pytest.fixture
def kafka_topic(kafka_admin: AdminClient) -> Iterator[str]:
    """A fresh 3-partition topic for one test, deleted afterwards."""
    name = f"test-{uuid.uuid4().hex[:12]}"
    create_topic(kafka_admin, name, 3)
    yield name
    kafka_admin.delete_topics([name])[name].result(timeout=30)


@pytest.fixture
def rt_topic(cfg: Config, kafka_admin: AdminClient) -> Iterator[str]:
    """A fresh 6-partition topic, like `events`, deleted afterwards."""
    name = f"rt-{uuid.uuid4().hex[:10]}"
    create_topic(kafka_admin, name, 6)
    yield name
    kafka_admin.delete_topics([name])[name].result(timeout=30)


@pytest.fixture
def redis_client(cfg: Config) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(cfg.redis_url, decode_responses=True)
    yield client
    client.close()


@pytest.fixture
def mongo_db(cfg: Config) -> Iterator[pymongo.database.Database]:
    """A throw-away database on the Mongo-wire server, dropped afterwards."""
    client: pymongo.MongoClient = pymongo.MongoClient(cfg.mongo_url, serverSelectionTimeoutMS=5000)
    name = f"test_{uuid.uuid4().hex[:12]}"
    yield client[name]
    client.drop_database(name)
    client.close()
