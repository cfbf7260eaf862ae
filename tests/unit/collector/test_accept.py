"""The one ingestion step: enrich, validate once, hand to the sink; invalid events to its DLQ."""

from __future__ import annotations

import pytest

from footfall_capture.accept import Accepted, MemorySink, accept
from footfall_capture.events import InvalidEvent, decode
from tests.unit.enrich.drafts import CTX, GOOGLEBOT, PUBLIC_IP, make_draft


def test_a_valid_draft_is_sent_encoded_and_keyed_by_visitor() -> None:
    """The sink gets the event's bytes, which decode as valid, keyed by the visitor id."""
    sink = MemorySink()
    result = accept(make_draft(), CTX, sink)
    assert result == Accepted("queued", "0190f2a4-6b7e-7c3d-8a1b-2c3d4e5f6a7b")
    [(key, data)] = sink.events
    event = decode(data)
    assert (event.event_id, event.path, key) == (result.event_id, "/products/42", event.visitor_id.encode())
    assert PUBLIC_IP.encode() not in data
    assert sink.invalid == []


def test_a_dropped_draft_is_ignored_with_its_reason_and_sends_nothing() -> None:
    sink = MemorySink()
    result = accept(make_draft(dnt=True), CTX, sink)
    assert (result.status, result.reason) == ("ignored", "do_not_track")
    assert sink.events == sink.invalid == []


def test_an_invalid_event_goes_to_the_invalid_topic_with_its_reason_and_is_raised() -> None:
    """A method the schema refuses (``M-SEARCH``): recorded as invalid, never as an event."""
    sink = MemorySink()
    draft = make_draft(type="request", method="M-SEARCH", status=200, ip=PUBLIC_IP)
    with pytest.raises(InvalidEvent) as raised:
        accept(draft, CTX, sink)
    assert raised.value.reason == "invalid_field"
    [(payload, reason)] = sink.invalid
    assert reason == "invalid_field"
    assert b"M-SEARCH" in payload
    assert PUBLIC_IP.encode() not in payload
    with pytest.raises(InvalidEvent):
        decode(payload)
    assert sink.events == []


def test_a_page_view_left_without_a_url_is_invalid() -> None:
    """A ``javascript:`` page URL has none left after canonicalization: invalid, not sent."""
    sink = MemorySink()
    with pytest.raises(InvalidEvent, match="pageview needs a url"):
        accept(make_draft(url="javascript:alert(1)"), CTX, sink)
    assert [reason for _payload, reason in sink.invalid] == ["invalid_field"]
    assert sink.events == []


def test_a_too_large_event_is_recorded_without_its_payload() -> None:
    """Within every field's limit, yet over the event size limit once encoded."""
    props = {f"k{i}": "\x01" * 512 for i in range(32)}  # each character is escaped as six bytes
    sink = MemorySink()
    with pytest.raises(InvalidEvent) as raised:
        accept(make_draft(type="signup", props=props), CTX, sink)
    assert raised.value.reason == "too_large"
    assert sink.invalid == [(b"", "too_large")]
    assert sink.events == []


def test_bots_are_flagged_and_sent_or_dropped_by_the_site_context() -> None:
    sink = MemorySink()
    accept(make_draft(user_agent=GOOGLEBOT), CTX, sink)
    assert decode(sink.events[0][1]).ua.is_bot
    dropping = type(CTX)(site_id="shop", domains=CTX.domains, drop_bots=True, salt=CTX.salt)
    assert accept(make_draft(user_agent=GOOGLEBOT), dropping, sink).reason == "bot"
