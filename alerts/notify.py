"""From an episode's change to the messages it sends: one :class:`Delivery` per enabled channel.

The deliveries are recorded in the caller's transaction and handed to Celery only once it
commits (``alerts.tasks.send_delivery``, by name), so a rolled-back check sends nothing and
a committed one is never lost: a delivery left ``pending`` is sent again by the next check.
"""

from __future__ import annotations

from typing import Literal

from django.db import IntegrityError, transaction

from alerts.models import Delivery, Episode
from footfall.celery_app import app

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
    # Footfall's app by name, not ``current_app``: in a web process (an admin's "send again")
    # no worker has made it current, and the default app would look for a broker elsewhere.
    transaction.on_commit(lambda: app.send_task(SEND_TASK, args=[pk]))
