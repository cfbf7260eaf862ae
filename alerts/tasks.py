"""Celery tasks of alerts and reports: thin wrappers around the domain functions.

``send_delivery`` is queued by :mod:`alerts.notify` (by name) once an episode's change
commits; it makes one attempt through :func:`alerts.delivery.send` and, when that asks for
another, schedules it with the delivery's own backoff (the attempt count lives on the
Delivery row, so a redelivered message neither resets it nor sends twice).
"""

from __future__ import annotations

import logging

from celery import Task, shared_task

from alerts import delivery
from alerts.models import Delivery

log = logging.getLogger(__name__)


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
