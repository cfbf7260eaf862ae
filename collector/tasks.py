"""Celery tasks of the collector (found by autodiscovery; scheduled in :mod:`footfall_server.celery_schedule`)."""

from __future__ import annotations

from celery import shared_task

from collector.ingest import salt_store
from collector.runtime import get_sink
from footfall.config import footfall_config
from footfall_capture.salt_days import salt_days_around


@shared_task(acks_late=True)
def replay_spool() -> int:
    """Send events spooled by collector processes that are gone (live ones replay their own)."""
    sink = get_sink(footfall_config())
    return sink.replay()


@shared_task(acks_late=True)
def make_salts_ahead() -> list[str]:
    """Create the salts of every day an event of now may hash with, in any time zone, and of
    the day after each, if missing: host sites whose Redis user may only read salts find them."""
    store = salt_store(footfall_config())
    days = salt_days_around(store.clock())
    store.make(days)
    return [day.isoformat() for day in days]
