"""Delivery of an episode's messages through a real Celery worker to a local SMTP server and
local HTTP receivers: what arrives, how it is signed, what is retried and what is recorded."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest

from alerts.delivery import DELIVERY_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER
from alerts.models import EMAIL, Channel, Delivery
from alerts.notify import episode_changed
from footfall_server.celery_app import app
from tests.integration.alerts.conftest import make_episode, spike_details, webhook_channel
from tests.ports import free_port

pytestmark = pytest.mark.django_db(transaction=True)

BACKOFF_S = 0.4  # the product's schedule, from a shorter base: 0.4 s, 0.8 s, 1.6 s, ...


@pytest.fixture(autouse=True)
def short_backoff(settings) -> None:
    settings.ALERT_DELIVERY_BACKOFF_SECONDS = BACKOFF_S


@pytest.fixture(autouse=True)
def receivers_on_loopback(allow_loopback: None) -> None:
    """The receivers of these tests listen on 127.0.0.1, allowed as an operator would allow it."""


def verifies(secret: str, headers: dict[str, str], body: bytes) -> bool:
    """The receiver's check, as docs/alerts.md shows it."""
    signed = f"{headers[TIMESTAMP_HEADER]}.{headers[DELIVERY_HEADER]}.".encode() + body
    expected = "sha256=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    return any(hmac.compare_digest(expected, value.strip()) for value in headers[SIGNATURE_HEADER].split(","))


def test_the_spike_email_arrives_with_text_html_top_referrer_and_chart(site, smtp, worker) -> None:
    """An aiosmtpd server receives the email: both parts name the top referrer, the PNG is inline."""
    channel = Channel.objects.create(site=site, name="ops", kind=EMAIL, email="ops@example.com")
    episode = make_episode(channel, spike_details(top_referrer="launch.example.org"))
    [delivery] = episode_changed(episode, "opened")
    assert worker.wait_final() == ["SUCCESS"]

    [message] = smtp.messages
    assert message["To"] == "ops@example.com"
    assert site.name in message["Subject"]
    text = message.get_body(("plain",)).get_content()
    html = message.get_body(("html",)).get_content()
    assert "launch.example.org" in text
    assert "launch.example.org" in html
    [image] = [part for part in message.walk() if part.get_content_type() == "image/png"]
    assert image.get_content().startswith(b"\x89PNG")
    assert f'src="cid:{image["Content-ID"].strip("<>")}"' in html
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.last_error) == (Delivery.SENT, 1, "")
    assert delivery.sent_at is not None


def test_a_permanently_refused_recipient_fails_at_once(site, smtp, worker) -> None:
    """An SMTP 550 for the recipient is not retried."""
    channel = Channel.objects.create(site=site, name="gone", kind=EMAIL, email="nobody@example.com")
    [delivery] = episode_changed(make_episode(channel), "opened")
    assert worker.wait_final() == ["SUCCESS"]
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == (Delivery.FAILED, 1)
    assert "no such user" in delivery.last_error
    assert smtp.messages == []


def test_a_temporary_smtp_refusal_is_retried(site, smtp, worker) -> None:
    """An SMTP 451 for the recipient is tried again; the second attempt delivers."""
    channel = Channel.objects.create(site=site, name="busy", kind=EMAIL, email="busy@example.com")
    [delivery] = episode_changed(make_episode(channel), "opened")
    assert worker.wait_final() == ["SUCCESS"]
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == (Delivery.SENT, 2)
    assert [m["To"] for m in smtp.messages] == ["busy@example.com"]


def test_the_webhook_is_signed_with_the_channel_secret(site, receiver, worker) -> None:
    """The signature verifies with the channel's secret, not with another; the body is the schema."""
    hook = receiver(200)
    channel = webhook_channel(site, hook.url)
    episode = make_episode(channel)
    [delivery] = episode_changed(episode, "opened")
    assert worker.wait_final() == ["SUCCESS"]

    [request] = hook.requests
    assert request.headers["Content-Type"] == "application/json"
    assert request.headers[DELIVERY_HEADER] == str(delivery.pk)
    assert verifies(channel.secret, request.headers, request.body)
    assert not verifies("another secret", request.headers, request.body)
    assert not verifies(channel.secret, request.headers, request.body + b" ")
    body = json.loads(request.body)
    assert (body["schema"], body["event"], body["delivery_id"]) == (1, "opened", delivery.pk)
    assert body["episode"]["id"] == episode.pk
    assert body["details"]["top_referrers"][0]["value"] == "news.ycombinator.com"
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.response_status) == (Delivery.SENT, 1, 200)


def test_a_slack_channel_gets_text_and_blocks(site, receiver, worker) -> None:
    """A Slack channel's body is Slack's incoming-webhook shape, signed all the same."""
    hook = receiver(200)
    channel = webhook_channel(site, hook.url, slack=True)
    episode_changed(make_episode(channel), "opened")
    assert worker.wait_final() == ["SUCCESS"]
    [request] = hook.requests
    body = json.loads(request.body)
    assert set(body) == {"text", "blocks"}
    assert "news.ycombinator.com" in json.dumps(body["blocks"])
    assert verifies(channel.secret, request.headers, request.body)


def test_two_500s_then_the_third_attempt_succeeds_after_the_backoff(site, receiver, worker) -> None:
    """A receiver answering 500 twice gets the third attempt; 3 attempts are recorded, sent."""
    hook = receiver(500, 500, 200)
    [delivery] = episode_changed(make_episode(webhook_channel(site, hook.url)), "opened")
    assert worker.wait_final() == ["SUCCESS"]

    assert len(hook.requests) == 3
    first, second, third = (r.at for r in hook.requests)
    assert second - first >= BACKOFF_S * 0.8  # base x 2^0, jitter at most -20 %
    assert third - second >= 2 * BACKOFF_S * 0.8  # doubled
    assert len({r.headers[DELIVERY_HEADER] for r in hook.requests}) == 1  # one delivery, for receivers' dedup
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.response_status) == (Delivery.SENT, 3, 200)
    assert delivery.last_error == ""


@pytest.mark.parametrize("status", [400, 410, 302])
def test_a_refusal_or_redirect_is_not_retried(site, receiver, worker, status: int) -> None:
    """4xx other than 408/429, and redirects (never followed), fail after one attempt."""
    hook = receiver(status)
    [delivery] = episode_changed(make_episode(webhook_channel(site, hook.url)), "opened")
    assert worker.wait_final() == ["SUCCESS"]
    assert len(hook.requests) == 1  # the redirect's target was not requested either
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.response_status) == (Delivery.FAILED, 1, status)
    assert f"HTTP {status}" in delivery.last_error
    if status >= 400:
        assert "refused: xxx" in delivery.last_error
        assert len(delivery.last_error) < 400  # the start of a 100 kB answer


def test_a_receiver_slower_than_the_timeout_is_retried(site, receiver, worker, settings) -> None:
    """A timeout is an attempt that failed for now: the next one, answered in time, delivers."""
    settings.ALERT_WEBHOOK_TIMEOUT_SECONDS = 0.5
    hook = receiver(200, delays=(2.0, 0.0))
    [delivery] = episode_changed(make_episode(webhook_channel(site, hook.url)), "opened")
    assert worker.wait_final() == ["SUCCESS"]
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.response_status) == (Delivery.SENT, 2, 200)
    assert len(hook.requests) == 2


def test_429_is_retried(site, receiver, worker) -> None:
    """Too Many Requests means later, not never."""
    hook = receiver(429, 204)
    [delivery] = episode_changed(make_episode(webhook_channel(site, hook.url)), "opened")
    assert worker.wait_final() == ["SUCCESS"]
    delivery.refresh_from_db()
    assert (len(hook.requests), delivery.status, delivery.attempts) == (2, Delivery.SENT, 2)


def test_an_unreachable_receiver_ends_failed_with_the_error(site, worker, settings) -> None:
    """Connection refused on every attempt: failed after the last, the error recorded."""
    settings.ALERT_DELIVERY_BACKOFF_SECONDS = 0.05
    url = f"http://127.0.0.1:{free_port()}/hook"  # nobody listens there
    [delivery] = episode_changed(make_episode(webhook_channel(site, url)), "opened")
    assert worker.wait_final() == ["SUCCESS"]
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == (Delivery.FAILED, settings.ALERT_DELIVERY_ATTEMPTS)
    assert delivery.response_status is None
    assert f"attempt {settings.ALERT_DELIVERY_ATTEMPTS}/" in delivery.last_error
    assert "ConnectError" in delivery.last_error
    assert delivery.sent_at is None


def test_running_a_sent_delivery_again_sends_nothing(site, receiver, worker) -> None:
    """A redelivered or repeated task for a sent delivery makes no request."""
    hook = receiver(200)
    [delivery] = episode_changed(make_episode(webhook_channel(site, hook.url)), "opened")
    assert worker.wait_final() == ["SUCCESS"]
    app.send_task("alerts.tasks.send_delivery", args=[delivery.pk])
    app.send_task("alerts.tasks.send_delivery", args=[delivery.pk])
    assert worker.wait_final(2) == ["SUCCESS", "SUCCESS"]
    assert len(hook.requests) == 1
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == (Delivery.SENT, 1)


def test_the_resolved_event_is_its_own_delivery(site, receiver, worker) -> None:
    """Opened and resolved are two messages; recording the same event again queues nothing."""
    hook = receiver(200)
    episode = make_episode(webhook_channel(site, hook.url))
    episode_changed(episode, "opened")
    assert episode_changed(episode, "opened") == []
    assert worker.wait_final() == ["SUCCESS"]
    episode.resolved_at = episode.opened_at.replace(hour=15)
    episode.save()
    episode_changed(episode, "resolved")
    assert worker.wait_final() == ["SUCCESS"]
    events = [json.loads(r.body)["event"] for r in hook.requests]
    assert events == ["opened", "resolved"]
    assert json.loads(hook.requests[1].body)["episode"]["resolved_at"] == "2026-11-26T15:00:00Z"
