"""A webhook's secret rotates with an overlap: a receiver verifying with the old secret, and one
with the new, both accept the alerts sent during the overlap (docs/alerts.md's recipe); a replay
with a changed delivery id verifies under neither; after the overlap only the new secret signs."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import time

from django.test import Client
from django.utils import timezone

from alerts.delivery import send as send_delivery
from alerts.models import Channel, Delivery
from alerts.notify import episode_changed
from tests.integration.alerts.conftest import make_episode, send


def verify(secret: str, headers: dict[str, str], body: bytes, max_age_s: int = 300) -> bool:
    """The receiver's check, as docs/alerts.md gives it."""
    timestamp, delivery = headers["X-Footfall-Timestamp"], headers["X-Footfall-Delivery"]
    if abs(time.time() - int(timestamp)) > max_age_s:
        return False
    signed = f"{timestamp}.{delivery}.".encode() + body
    expected = "sha256=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    return any(hmac.compare_digest(expected, value.strip()) for value in headers["X-Footfall-Signature"].split(","))


def deliver(channel: Channel) -> None:
    [delivery] = episode_changed(make_episode(channel), "opened")
    assert send_delivery(delivery.pk).status == Delivery.SENT


def test_receivers_verify_across_a_rotation_and_refuse_a_changed_delivery_id(
    client: Client, manager, receiver, allow_loopback
) -> None:
    hook = receiver(200)
    created = send(client, manager, "POST", "alerts/channels", {"name": "Hook", "kind": "webhook", "url": hook.url})
    assert created.status_code == 201
    old = created.json()["secret"]
    channel = Channel.objects.get(pk=created.json()["channel_id"])

    reader = Client(HTTP_AUTHORIZATION="Bearer nothing")
    assert reader.post(f"/api/v1/sites/{manager.site.site_id}/alerts/channels/{channel.pk}/secret").status_code == 401
    rotated = send(client, manager, "POST", f"alerts/channels/{channel.pk}/secret")
    assert rotated.status_code == 200
    new = rotated.json()["secret"]
    assert new != old
    until = dt.datetime.fromisoformat(rotated.json()["previous_valid_until"])
    assert dt.timedelta(days=6) < until - timezone.now() <= dt.timedelta(days=7)
    assert new not in send(client, manager, "GET", "alerts/channels").content.decode()

    channel.refresh_from_db()
    deliver(channel)
    [during] = hook.requests
    assert verify(old, during.headers, during.body)  # a receiver not switched over yet
    assert verify(new, during.headers, during.body)  # one that has
    replay = {**during.headers, "X-Footfall-Delivery": str(int(during.headers["X-Footfall-Delivery"]) + 1)}
    assert not verify(old, replay, during.body)
    assert not verify(new, replay, during.body)

    Channel.objects.filter(pk=channel.pk).update(previous_secret_until=timezone.now() - dt.timedelta(seconds=1))
    channel.refresh_from_db()
    deliver(channel)
    after = hook.requests[-1]
    assert verify(new, after.headers, after.body)
    assert not verify(old, after.headers, after.body)
    assert "," not in after.headers["X-Footfall-Signature"]
