"""Celery tasks of the collector (found by autodiscovery; scheduled in :mod:`footfall.celery_schedule`)."""

from __future__ import annotations

from celery import shared_task

from collector.runtime import footfall_config, get_sink


@shared_task(acks_late=True)
def replay_spool() -> int:
    """Send events spooled by collector processes that are gone (live ones replay their own)."""
    sink = get_sink(footfall_config())
    return sink.replay()
