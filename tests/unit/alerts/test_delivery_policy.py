"""The pure parts of delivery: signatures, backoff, and what is refused before any I/O."""

from __future__ import annotations

import hashlib
import hmac
import random

import pytest

from alerts.delivery import DeliveryError, backoff_seconds, post_webhook, signature


def test_signature_is_hmac_sha256_of_timestamp_delivery_and_body() -> None:
    body = b'{"event":"opened"}'
    expected = hmac.new(b"s3cret", b"1764165600.42." + body, hashlib.sha256).hexdigest()
    assert signature("s3cret", 1764165600, 42, body) == f"sha256={expected}"
    assert signature("other", 1764165600, 42, body) != signature("s3cret", 1764165600, 42, body)
    assert signature("s3cret", 1764165601, 42, body) != signature("s3cret", 1764165600, 42, body)
    assert signature("s3cret", 1764165600, 43, body) != signature("s3cret", 1764165600, 42, body)


def test_backoff_doubles_from_the_base_with_bounded_jitter() -> None:
    rng = random.Random(7)
    for attempt, nominal in [(1, 30), (2, 60), (3, 120), (4, 240)]:
        waits = [backoff_seconds(attempt, 30, rng) for _ in range(200)]
        assert nominal * 0.8 <= min(waits) < max(waits) <= nominal * 1.2
    with pytest.raises(ValueError, match="attempt"):
        backoff_seconds(0, 30)


@pytest.mark.parametrize("url", ["ftp://example.com/hook", "file:///etc/passwd", "javascript:alert(1)", "example.com"])
def test_only_http_urls_are_posted_to(url: str) -> None:
    with pytest.raises(DeliveryError, match="not an http") as caught:
        post_webhook(url, "k", b"{}", 1, timestamp=0)
    assert caught.value.retry is False
