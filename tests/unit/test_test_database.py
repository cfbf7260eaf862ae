"""The test database behaves as a deployment's SQLite file: a connection that meets another
connection's lock waits (busy timeout) or reads, where Django's default in-memory test database
fails at once with "database table is locked" (tests/conftest.py)."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection, transaction

from footfall.models import Site


def site_exists(site_id: str) -> bool:
    """Read in this thread's own connection, and close it (threads do not share connections)."""
    try:
        return Site.objects.filter(site_id=site_id).exists()
    finally:
        connection.close()


@pytest.mark.django_db(transaction=True)
def test_a_thread_reads_a_table_while_another_connection_writes_it() -> None:
    """As the alert tests' in-thread Celery worker reads deliveries while the test records one."""
    committed = Site.objects.create(site_id=f"db-{uuid.uuid4().hex[:8]}", name="Committed", timezone="UTC")
    with transaction.atomic(), ThreadPoolExecutor(1) as pool:
        Site.objects.create(site_id=f"db-{uuid.uuid4().hex[:8]}", name="Open", timezone="UTC")
        assert pool.submit(site_exists, committed.site_id).result(timeout=30)
