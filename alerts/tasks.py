"""Celery tasks of the alerts (found by autodiscovery; scheduled in :mod:`footfall.celery_schedule`)."""

from __future__ import annotations

from collections import Counter

from celery import shared_task

from alerts.checks import run_checks


@shared_task(acks_late=True)
def check_alerts() -> dict[str, int]:
    """Check every enabled alert rule once (beat: every minute); counts of what was done.

    Safe to run twice (late acknowledgement redelivers it after a lost worker): a rule has at
    most one open episode and an episode event at most one delivery per channel."""
    return dict(Counter(outcome.action for outcome in run_checks()))
