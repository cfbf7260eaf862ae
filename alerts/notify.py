"""From an episode's change to the messages it sends: one :class:`Delivery` per enabled channel.

The deliveries are recorded in the caller's transaction and handed to Celery only once it
commits (``alerts.tasks.send_delivery``, by name), so a rolled-back check sends nothing and
a committed one is never lost: a delivery left ``pending`` is sent again by the next check.
"""

from __future__ import annotations

from typing import Literal

from celery import current_app
from django.db import IntegrityError, transaction

from alerts.models import Delivery, Episode

SEND_TASK = "alerts.tasks.send_delivery"


def episode_changed(episode: Episode, event: Literal["opened", "resolved"]) -> list[Delivery]:
    """Record and queue the ``event`` message of ``episode`` to each enabled channel of its rule;
    none for a suppressed episode. Calling it again for the same event records nothing new."""
    if episode.suppressed:
        return []
    created = []
    for channel in episode.rule.channels.filter(enabled=True).order_by("id"):
        try:
            with transaction.atomic():
                created.append(Delivery.objects.create(channel=channel, episode=episode, event=event))
        except IntegrityError:  # already recorded for this episode, event and channel
            continue
    for delivery in created:
        queue(delivery)
    return created


def queue(delivery: Delivery) -> None:
    """Hand ``delivery`` to a Celery worker once the current transaction commits."""
    pk = delivery.pk
    # By name through the current app: the project package (footfall_server) loads Footfall's
    # Celery app with the settings, so it is current in web processes too.
    transaction.on_commit(lambda: current_app.send_task(SEND_TASK, args=[pk]))
