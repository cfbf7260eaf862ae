"""Sending one :class:`~alerts.models.Delivery`: an episode's message to an email or webhook
channel, with each attempt's outcome recorded on the delivery (the delivery log).

:func:`send` makes one attempt and says what should happen next: nothing (sent, failed for
good, or not ours to send any more) or another attempt after :func:`backoff_seconds`. The
Celery task ``alerts.tasks.send_delivery`` only schedules that retry, so the policy lives
here and is the same however the task is run.

What is retried: a webhook answering 408, 429 or 5xx, a timeout or a connection error; an
SMTP server's temporary (4xx) refusal or an unreachable server. What is not: any other 4xx
(the receiver refuses this request and will refuse it again), a redirect (not followed: a
signed alert goes where it was configured to go, nowhere else), a webhook host that is or
resolves to an address webhooks may not reach (:mod:`alerts.egress`: public addresses only
unless ``ALERT_WEBHOOK_ALLOWED_NETWORKS`` allows more), a permanent (5xx) SMTP refusal.
After ``ALERT_DELIVERY_ATTEMPTS`` attempts the delivery is ``failed`` with the last error.

A delivery is claimed before each attempt by a conditional update of its attempt count, so
two workers running the same task (a redelivered message, ``acks_late``) never both send
one attempt, and a delivery that is ``sent`` or ``failed`` is never sent again.

Webhook requests are signed: ``X-Footfall-Signature: sha256=<hex>`` is the HMAC-SHA256,
under the channel's secret, of ``"<X-Footfall-Timestamp>.<X-Footfall-Delivery>." + body``, so
neither the time nor the delivery id a receiver de-duplicates on can be changed in a replay.
While a rotated secret's overlap lasts the header holds a second value, under the previous
secret (``sha256=<new>, sha256=<old>``; see ``docs/alerts.md`` for the receiver's side).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import random
import smtplib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx
from django.conf import settings
from django.core.mail import EmailMessage
from django.db.models import F
from django.utils import timezone

from alerts.egress import AddressRefused, PinnedTransport, Resolver, resolve
from alerts.messages import episode_email, slack_body, webhook_body
from alerts.models import EMAIL, WEBHOOK, Delivery
from footfall.config import footfall_config

log = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Footfall-Signature"
TIMESTAMP_HEADER = "X-Footfall-Timestamp"
DELIVERY_HEADER = "X-Footfall-Delivery"
RETRIED_STATUSES = frozenset({408, 429})  # 4xx answers that mean "later", not "never"
MAX_RETRY_AFTER_S = 3600.0  # a receiver's Retry-After is honoured up to this
ERROR_CHARS = 2000  # of an error kept in last_error
RESPONSE_EXCERPT_BYTES = 300  # of a refusing receiver's body kept in last_error
USER_AGENT = "Footfall-Alerts/1"


class DeliveryError(Exception):
    """An attempt that did not deliver; ``retry`` says whether another attempt may succeed."""

    def __init__(
        self, message: str, *, retry: bool, status: int | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.retry = retry
        self.status = status
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one call of :func:`send` did: the delivery's status afterwards, and when to try
    again (seconds from now) if it is still pending."""

    status: str
    retry_in: float | None = None
    attempted: bool = True


def send(delivery_id: int, *, now: float | None = None) -> Outcome:
    """Make one attempt at ``delivery_id`` and record it; an unknown id raises
    ``Delivery.DoesNotExist``. A delivery no longer pending (sent, failed) is left as it is."""
    delivery = Delivery.objects.select_related("channel__site", "episode__rule__site").get(pk=delivery_id)
    if delivery.status != Delivery.PENDING:
        return Outcome(delivery.status, attempted=False)
    claimed = Delivery.objects.filter(pk=delivery.pk, status=Delivery.PENDING, attempts=delivery.attempts).update(
        attempts=F("attempts") + 1
    )
    if not claimed:  # another worker is on this attempt; its run records the outcome
        delivery.refresh_from_db()
        return Outcome(delivery.status, attempted=False)
    attempt = delivery.attempts + 1
    max_attempts = settings.ALERT_DELIVERY_ATTEMPTS
    try:
        try:
            status = _transmit(delivery, now=time.time() if now is None else now)
        except DeliveryError:
            raise
        except Exception as exc:  # a bug or a passing fault while rendering: recorded, retried, bounded
            log.exception("delivery %s: attempt %s could not be made", delivery.pk, attempt)
            raise DeliveryError(f"{type(exc).__name__}: {exc}", retry=True) from exc
    except DeliveryError as exc:
        final = not exc.retry or attempt >= max_attempts
        Delivery.objects.filter(pk=delivery.pk).update(
            status=Delivery.FAILED if final else Delivery.PENDING,
            response_status=exc.status,
            last_error=f"attempt {attempt}/{max_attempts}: {exc}"[:ERROR_CHARS],
        )
        log.warning("delivery %s attempt %s/%s failed%s: %s", delivery.pk, attempt, max_attempts,
                    "" if final else ", will retry", exc)  # fmt: skip
        if final:
            return Outcome(Delivery.FAILED)
        wait = backoff_seconds(attempt, settings.ALERT_DELIVERY_BACKOFF_SECONDS)
        if exc.retry_after is not None:
            wait = max(wait, min(exc.retry_after, MAX_RETRY_AFTER_S))
        return Outcome(Delivery.PENDING, retry_in=wait)
    Delivery.objects.filter(pk=delivery.pk).update(
        status=Delivery.SENT, response_status=status, last_error="", sent_at=timezone.now()
    )
    return Outcome(Delivery.SENT)


def backoff_seconds(attempt: int, base: float, rng: random.Random | None = None) -> float:
    """The wait after failed attempt number ``attempt`` (1, 2, ...): ``base * 2^(attempt-1)``
    with ±20 % jitter, so receivers that failed together are not retried in lockstep."""
    if attempt < 1 or base < 0:
        raise ValueError(f"attempt >= 1 and base >= 0 expected, got {attempt}, {base}")
    return base * 2 ** (attempt - 1) * (rng or random).uniform(0.8, 1.2)


def signature(secret: str, timestamp: int, delivery_id: int, body: bytes) -> str:
    """One ``X-Footfall-Signature`` value: of ``body`` of delivery ``delivery_id`` sent at
    ``timestamp`` (unix seconds), under ``secret``."""
    digest = hmac.new(secret.encode(), f"{timestamp}.{delivery_id}.".encode() + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def _transmit(delivery: Delivery, *, now: float) -> int | None:
    """Send ``delivery``'s message once; the receiver's status (None for email) or DeliveryError."""
    channel, episode = delivery.channel, delivery.episode
    if channel is None or episode is None:
        raise DeliveryError("only an episode's message to a channel is sent here", retry=False)
    if not channel.enabled:
        raise DeliveryError(f"channel {channel.name!r} was disabled before the message was sent", retry=False)
    public_url = footfall_config().public_url
    if channel.kind == EMAIL:
        _send_email(episode_email(episode, delivery.event, channel.email, public_url))
        return None
    if channel.kind == WEBHOOK:
        if channel.slack:
            payload = slack_body(episode, delivery.event, public_url)
        else:
            payload = webhook_body(delivery.pk, episode, delivery.event, public_url)
        body = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
        return post_webhook(channel.url, channel.signing_secrets(now), body, delivery.pk, timestamp=int(now))
    raise DeliveryError(f"unknown channel kind {channel.kind!r}", retry=False)


def _send_email(message: EmailMessage) -> None:
    """Hand ``message`` to Django's email backend; SMTP refusals classified by their code."""
    try:
        message.send(fail_silently=False)
    except smtplib.SMTPRecipientsRefused as exc:
        codes = [code for code, _ in exc.recipients.values()]
        raise DeliveryError(f"recipient refused: {exc.recipients}", retry=all(400 <= c < 500 for c in codes)) from exc
    except smtplib.SMTPResponseException as exc:
        text = exc.smtp_error.decode(errors="replace") if isinstance(exc.smtp_error, bytes) else str(exc.smtp_error)
        raise DeliveryError(f"SMTP {exc.smtp_code}: {text}", retry=400 <= exc.smtp_code < 500) from exc
    except (smtplib.SMTPException, OSError) as exc:  # unreachable, dropped, TLS failed: try again later
        raise DeliveryError(f"SMTP: {type(exc).__name__}: {exc}", retry=True) from exc


def post_webhook(
    url: str, secrets: str | Sequence[str], body: bytes, delivery_id: int, *, timestamp: int,
    resolver: Resolver = resolve,
) -> int:  # fmt: skip
    """POST ``body`` (JSON) to ``url``, signed under each of ``secrets`` (the channel's, then a
    rotated one's while its overlap lasts); the 2xx status, or DeliveryError saying whether
    to retry. Only http(s) URLs are sent to; redirects are not followed. Unless
    ``ALERT_WEBHOOK_ALLOWED_NETWORKS`` is None (any address), the host is resolved once with
    ``resolver`` and the request goes only to those addresses, all of them public or allowed."""
    scheme = urlsplit(url).scheme
    if scheme not in ("http", "https"):  # the URL itself is never logged: it may be the credential
        raise DeliveryError(f"not an http(s) URL (scheme {scheme[:20]!r})", retry=False)
    keys = [secrets] if isinstance(secrets, str) else list(secrets)
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        SIGNATURE_HEADER: ", ".join(signature(key, timestamp, delivery_id, body) for key in keys),
        TIMESTAMP_HEADER: str(timestamp),
        DELIVERY_HEADER: str(delivery_id),
    }
    timeout = httpx.Timeout(settings.ALERT_WEBHOOK_TIMEOUT_SECONDS)
    networks = settings.ALERT_WEBHOOK_ALLOWED_NETWORKS
    # Checked (the default): connections go only to checked addresses, never through
    # HTTP(S)_PROXY (a proxy would resolve the name itself). Any address ("*"): no check, and
    # HTTP(S)_PROXY and NO_PROXY apply (trust_env), as operators behind an egress proxy need.
    transport = None if networks is None else PinnedTransport(networks, resolver)
    try:
        with (
            httpx.Client(timeout=timeout, follow_redirects=False, transport=transport) as client,
            client.stream("POST", url, content=body, headers=headers) as response,
        ):
            excerpt = _excerpt(response)
    except AddressRefused as exc:  # nothing was sent; the same address is refused next time
        raise DeliveryError(f"not sent: {exc}", retry=False) from exc
    except httpx.TimeoutException as exc:
        raise DeliveryError(f"timed out: {type(exc).__name__}: {exc}", retry=True) from exc
    except httpx.HTTPError as exc:  # connection refused, DNS, TLS, protocol errors
        raise DeliveryError(f"{type(exc).__name__}: {exc}", retry=True) from exc
    except httpx.InvalidURL as exc:  # its message quotes the URL, which may be the credential
        raise DeliveryError("invalid URL", retry=False) from exc
    status = response.status_code
    if 200 <= status < 300:
        return status
    if 300 <= status < 400:
        where = response.headers.get("Location", "")
        raise DeliveryError(f"HTTP {status} redirect to {where[:200]!r} not followed", retry=False, status=status)
    retry = status >= 500 or status in RETRIED_STATUSES
    raise DeliveryError(
        f"HTTP {status}: {excerpt}" if excerpt else f"HTTP {status}",
        retry=retry,
        status=status,
        retry_after=_retry_after(response.headers.get("Retry-After")) if retry else None,
    )


def _excerpt(response: httpx.Response) -> str:
    """The start of ``response``'s body for the delivery log; the rest is never read, so a
    receiver answering with a huge body costs the worker nothing."""
    if 200 <= response.status_code < 300:
        return ""
    head = b""
    for chunk in response.iter_bytes():
        head += chunk
        if len(head) >= RESPONSE_EXCERPT_BYTES:
            break
    return head[:RESPONSE_EXCERPT_BYTES].decode(response.encoding or "utf-8", errors="replace").strip()


def _retry_after(value: str | None) -> float | None:
    """A ``Retry-After`` of delay seconds (an HTTP date is rare from webhooks: ignored)."""
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None
