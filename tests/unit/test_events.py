"""The schema-v1 event model: round trips, limits and the reasons given for bad input."""

from __future__ import annotations

import msgspec
import pytest

from footfall_capture import events
from footfall_capture.events import (
    MAX_EVENT_BYTES,
    Event,
    InvalidEvent,
    UserAgent,
    Utm,
    decode,
    encode,
    new_event_id,
    to_builtins,
    validate,
)

TS = 1_763_700_000_000  # 2025-11-21


def make(**fields: object) -> Event:
    base: dict[str, object] = {
        "event_id": "0190f2a4-6b7e-7c3d-8a1b-2c3d4e5f6a7b",
        "site_id": "demo",
        "type": "pageview",
        "ts": TS,
        "received_at": TS + 40,
        "schema": 1,
        "url": "https://example.com/a",
        "path": "/a",
    }
    return Event(**{**base, **fields})


def raw(**fields: object) -> bytes:
    return msgspec.json.encode(to_builtins(make(**fields)))


def test_round_trip_keeps_every_field() -> None:
    """encode → decode gives back an equal event, nested structs included."""
    event = make(
        referrer="https://www.google.com/",
        ref_domain="google.com",
        ref_type="search",
        utm=Utm(source="news", medium="email", campaign="launch"),
        visitor_id="ab" * 16,
        ua=UserAgent(browser="Firefox", os="Linux", device="desktop"),
        country="DE",
        props={"plan": "pro", "seats": 3, "trial": False},
    )
    assert decode(encode(event)) == event


def test_defaults_are_omitted_on_the_wire() -> None:
    """Unset optional fields cost no bytes on the log."""
    data = encode(make())
    assert b"title" not in data
    assert b"utm" not in data
    assert msgspec.json.decode(data)["schema"] == 1


def test_unknown_fields_are_ignored_for_forward_compatibility() -> None:
    """A newer producer's extra field does not break this consumer."""
    doc = msgspec.json.decode(raw())
    doc["added_in_v1_1"] = {"anything": [1, 2]}
    assert decode(msgspec.json.encode(doc)) == make()


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"{not json", "malformed_json"),
        (b"", "malformed_json"),
        (b"[]", "invalid_field"),
        (b'{"site_id": "demo"}', "invalid_field"),
        (b"x" * (MAX_EVENT_BYTES + 1), "too_large"),
    ],
)
def test_garbage_gets_a_reason(data: bytes, reason: str) -> None:
    """Malformed bytes raise InvalidEvent with a stable reason code."""
    with pytest.raises(InvalidEvent) as err:
        decode(data)
    assert err.value.reason == reason


@pytest.mark.parametrize(
    ("field", "value", "where"),
    [
        ("event_id", "not-a-uuid", "$.event_id"),
        ("site_id", "Has Spaces", "$.site_id"),
        ("ts", 12, "$.ts"),
        ("ts", "1763700000000", "$.ts"),
        ("status", 99, "$.status"),
        ("country", "germany", "$.country"),
        ("ref_type", "carrier-pigeon", "$.ref_type"),
        ("url", "https://x/" + "a" * 3000, "$.url"),
        ("props", {f"k{i}": i for i in range(40)}, "$.props"),
    ],
)
def test_invalid_field_names_the_field(field: str, value: object, where: str) -> None:
    """A wrong field is reported as invalid_field with its JSON path."""
    doc = msgspec.json.decode(raw())
    doc[field] = value
    with pytest.raises(InvalidEvent) as err:
        decode(msgspec.json.encode(doc))
    assert err.value.reason == "invalid_field"
    assert where in str(err.value)


def test_future_schema_is_rejected_not_half_read() -> None:
    """schema 2 gets its own reason so operators can tell version skew from garbage."""
    doc = msgspec.json.decode(raw())
    doc["schema"] = 2
    with pytest.raises(InvalidEvent) as err:
        decode(msgspec.json.encode(doc))
    assert err.value.reason == "unsupported_schema"


def test_missing_schema_is_invalid() -> None:
    """Every v1 event names its schema; a reader never has to guess."""
    doc = msgspec.json.decode(raw())
    del doc["schema"]
    with pytest.raises(InvalidEvent, match="schema"):
        decode(msgspec.json.encode(doc))


def test_pageview_needs_a_url() -> None:
    doc = msgspec.json.decode(raw())
    del doc["url"]
    with pytest.raises(InvalidEvent, match="pageview needs a url"):
        decode(msgspec.json.encode(doc))


def test_custom_event_without_url_is_fine() -> None:
    event = make(type="signup", url=None, props={"plan": "pro"})
    assert validate(event) == event


def test_validate_catches_constraints_the_constructor_skips() -> None:
    """Struct constructors do not check types, lengths or ranges; validate() does."""
    with pytest.raises(InvalidEvent):
        validate(make(ts=12))


def test_constructor_checks_shaped_fields() -> None:
    """Ids, types and codes are checked wherever an event is made, and named as decode names them."""
    with pytest.raises(ValueError, match=r"\$\.site_id"):
        make(site_id="NOT OK")
    with pytest.raises(ValueError, match=r"\$\.country"):
        make(country="GB\n")  # the whole value must match, not a line of it


def test_oversized_event_cannot_be_encoded() -> None:
    """The producer side refuses events above the bound instead of the broker dropping them."""
    with pytest.raises(InvalidEvent) as err:
        encode(make(props={"blob": "v" * MAX_EVENT_BYTES}))
    assert err.value.reason == "too_large"


def test_new_event_ids_are_time_ordered_uuid7() -> None:
    ids = [new_event_id() for _ in range(100)]
    assert all(i[14] == "7" for i in ids)
    assert ids == sorted(ids)
    assert len(set(ids)) == 100


def test_decode_is_pure() -> None:
    """Decoding the same bytes twice gives equal events (no hidden state)."""
    data = raw(props={"a": 1})
    assert decode(data) == decode(data)


def test_remembered_shapes_stay_bounded_and_never_admit_a_bad_value() -> None:
    """Repeating values are matched once; a flood of made-up types cannot grow the memory, and
    a misshapen value is refused however many good ones came before."""
    for i in range(3000):
        make(type=f"custom.{i}")
    assert len(events._TYPES) <= events._KNOWN_MAX
    make(site_id="good-site")
    with pytest.raises(ValueError, match=r"\$\.site_id"):
        make(site_id="good-site\n")
