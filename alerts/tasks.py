"""Celery tasks of alerts and reports: thin wrappers around the domain functions (found by
autodiscovery; periodic ones scheduled in :mod:`footfall_server.celery_schedule`).

``send_delivery`` is queued by :mod:`alerts.notify` (by name) once an episode's change
commits; it makes one attempt through :func:`alerts.delivery.send` and, when that asks for
another, schedules it with the delivery's own backoff (the attempt count lives on the
Delivery row, so a redelivered message neither resets it nor sends twice).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections import Counter

from celery import Task, shared_task

from alerts import delivery
from alerts.checks import run_checks
from alerts.models import Delivery
from alerts.report_delivery import send_due_reports

log = logging.getLogger(__name__)


@shared_task(acks_late=True)
def check_alerts() -> dict[str, int]:
    """Check every enabled alert rule once (beat: every minute); counts of what was done.

    Safe to run twice (late acknowledgement redelivers it after a lost worker): a rule has at
    most one open episode and an episode event at most one delivery per channel."""
    return dict(Counter(outcome.action for outcome in run_checks()))


@shared_task(bind=True, name="alerts.tasks.send_delivery", max_retries=None, ignore_result=True)
def send_delivery(self: Task, delivery_id: int) -> str:
    """Attempt delivery ``delivery_id``; returns its status, or retries after the backoff."""
    try:
        outcome = delivery.send(int(delivery_id))
    except Delivery.DoesNotExist:  # its channel, rule or site was deleted since it was queued
        log.info("delivery %s no longer exists; nothing to send", delivery_id)
        return "gone"
    if outcome.retry_in is not None:
        raise self.retry(countdown=outcome.retry_in)
    return outcome.status


@shared_task(name="alerts.tasks.send_reports", acks_late=True, ignore_result=True)
def send_reports(now: str | None = None) -> dict[str, list[str]]:
    """Send the weekly and monthly reports due at ``now`` (ISO 8601 with an offset; default the
    current time), each once (``alerts.report_delivery``); returns what was sent, deferred or failed.

    Safe to run twice (late acknowledgement): a report's Delivery row is claimed once per period."""
    moment = dt.datetime.now(dt.UTC) if now is None else dt.datetime.fromisoformat(now)
    if moment.tzinfo is None:
        raise ValueError(f"now must carry a UTC offset, e.g. 2026-11-23T08:00:00+00:00, not {now!r}")
    return send_due_reports(moment).as_dict()
