"""Celery tasks of the collector (found by autodiscovery; scheduled in :mod:`footfall_server.celery_schedule`)."""

from __future__ import annotations

from celery import shared_task

from collector.runtime import get_sink
from footfall.config import footfall_config


@shared_task(acks_late=True)
def replay_spool() -> int:
    """Send events spooled by collector processes that are gone (live ones replay their own)."""
    sink = get_sink(footfall_config())
    return sink.replay()
