"""The clickstream event, schema version 1: the one wire format every part of Footfall shares.

An event is JSON on the Kafka log. This module owns its shape, its limits and its
validation; producers (collector), consumers (realtime, archiver) and the Spark jobs
import it and never re-describe fields.

Contract:

* :func:`encode` turns an :class:`Event` into compact JSON bytes (fields left at their
  defaults are omitted, so events stay small on the log).
* :func:`decode` turns bytes from the wire into a validated :class:`Event` or raises
  :class:`InvalidEvent` whose ``reason`` is one of :data:`INVALID_REASONS` (a stable code
  for the ``events.invalid`` topic and metrics) and whose message says which field is
  wrong. Unknown fields are ignored, so older consumers keep working when newer producers
  add fields (forward compatible); the raw bytes, unknown fields included, are what the
  archive keeps.
* A future schema version is rejected with reason ``unsupported_schema`` rather than
  half-read.

msgspec does the parsing and type checks in C; the few cross-field rules live in
``__post_init__`` (msgspec reports a ``ValueError`` raised there as a validation error).
"""

from __future__ import annotations

import re
from typing import Annotated, Final, Literal

import msgspec
import uuid_utils

SCHEMA_VERSION: Final = 1
SUPPORTED_SCHEMAS: Final = frozenset({1})

# Kafka's default message limit is 1 MB and a broker silently refuses bigger records;
# bounding each event far below it, at the edge, keeps that failure impossible.
MAX_EVENT_BYTES: Final = 32 * 1024
MAX_URL_LENGTH: Final = 2048
MAX_INPUT_TEXT: Final = 8192  # what the collector takes in a text field, then cuts to the event's limits
MAX_TITLE_LENGTH: Final = 512
MAX_PROPS: Final = 32
MAX_PROP_KEY_LENGTH: Final = 64
MAX_PROP_VALUE_LENGTH: Final = 512

# Event time sanity: no event predates 2000-01-01, none lies past 2100 (ms since epoch).
MIN_TS_MS: Final = 946_684_800_000
MAX_TS_MS: Final = 4_102_444_800_000

REF_TYPES: Final = ("search", "social", "email", "internal", "direct", "other")
DEVICES: Final = ("desktop", "mobile", "tablet", "bot", "other")
BUILTIN_TYPES: Final = ("pageview", "request")

INVALID_REASONS: Final = (
    "too_large",  # encoded event above MAX_EVENT_BYTES
    "malformed_json",  # not parseable as JSON at all
    "unsupported_schema",  # a schema version this build does not know
    "invalid_field",  # parseable, but a field is missing, mistyped or out of range
)

# The text fields with a shape. Event.__post_init__ checks them with these compiled
# patterns rather than msgspec.Meta(pattern=...), whose checks look the pattern's method up
# by name each time and were the dearest part of validating an event.
EVENT_ID: Final = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
SITE_ID: Final = re.compile(r"[a-z0-9][a-z0-9_\-]{0,63}")
EVENT_TYPE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:\-]{0,63}")
VISITOR_ID: Final = re.compile(r"[0-9a-f]{16,64}")
COUNTRY: Final = re.compile(r"[A-Z]{2}")
METHOD: Final = re.compile(r"[A-Z]{1,16}")
Timestamp = Annotated[int, msgspec.Meta(ge=MIN_TS_MS, le=MAX_TS_MS)]
Url = Annotated[str, msgspec.Meta(max_length=MAX_URL_LENGTH)]
ShortText = Annotated[str, msgspec.Meta(max_length=256)]
PropKey = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_PROP_KEY_LENGTH)]
PropValue = Annotated[str, msgspec.Meta(max_length=MAX_PROP_VALUE_LENGTH)] | int | float | bool | None


class InvalidEvent(ValueError):
    """An event that must not be counted; ``reason`` is one of :data:`INVALID_REASONS`."""

    def __init__(self, reason: str, detail: str) -> None:
        assert reason in INVALID_REASONS, reason
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


class UserAgent(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=False):
    """What the collector derived from the User-Agent header (the raw header is not kept)."""

    browser: ShortText | None = None
    browser_version: ShortText | None = None
    os: ShortText | None = None
    device: Literal["desktop", "mobile", "tablet", "bot", "other"] | None = None
    is_bot: bool = False


class Utm(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=False):
    """Campaign parameters taken from the page URL."""

    source: ShortText | None = None
    medium: ShortText | None = None
    campaign: ShortText | None = None
    term: ShortText | None = None
    content: ShortText | None = None


class Event(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=False):
    """One clickstream event, schema version 1 (see DESIGN.md, "Event").

    Build one with ``schema=SCHEMA_VERSION``; it is the only field without a default that
    says nothing about the event itself, and it is required so it is never left off the wire.

    ``ts`` and ``received_at`` are milliseconds since the Unix epoch, UTC. ``event_id`` is
    a lower-case UUID; the collector mints a time-ordered UUIDv7 unless the client sent
    one (kept, so a retried beacon dedupes downstream).
    """

    event_id: str  # EVENT_ID, like the other shaped fields (see __post_init__)
    site_id: str  # SITE_ID: never holds ":", which Redis keys rely on
    type: str  # EVENT_TYPE
    ts: Timestamp
    received_at: Timestamp
    schema: int  # required on the wire: a reader must know which version it holds
    url: Url | None = None
    host: ShortText | None = None
    path: Url | None = None
    title: Annotated[str, msgspec.Meta(max_length=MAX_TITLE_LENGTH)] | None = None
    referrer: Url | None = None
    ref_domain: ShortText | None = None
    ref_type: Literal["search", "social", "email", "internal", "direct", "other"] | None = None
    utm: Utm | None = None
    visitor_id: str | None = None  # VISITOR_ID
    ua: UserAgent | None = None
    country: str | None = None  # COUNTRY
    method: str | None = None  # METHOD
    status: Annotated[int, msgspec.Meta(ge=100, le=599)] | None = None
    duration_ms: Annotated[float, msgspec.Meta(ge=0)] | None = None
    props: Annotated[dict[PropKey, PropValue], msgspec.Meta(max_length=MAX_PROPS)] | None = None

    def __post_init__(self) -> None:
        if self.schema not in SUPPORTED_SCHEMAS:
            raise ValueError(f"unsupported schema version {self.schema}")
        if (
            EVENT_ID.fullmatch(self.event_id) is None
            or (self.site_id not in _SITE_IDS and not _matches(SITE_ID, self.site_id, _SITE_IDS))
            or (self.type not in _TYPES and not _matches(EVENT_TYPE, self.type, _TYPES))
            or (self.visitor_id is not None and VISITOR_ID.fullmatch(self.visitor_id) is None)
            or (self.country is not None and self.country not in _COUNTRIES
                and not _matches(COUNTRY, self.country, _COUNTRIES))
            or (self.method is not None and self.method not in _METHODS and not _matches(METHOD, self.method, _METHODS))
        ):  # fmt: skip
            raise ValueError(_shape_error(self))
        if self.type == "pageview" and not self.url:
            raise ValueError("a pageview needs a url")


# Site ids, event types, countries and methods repeat in nearly every event: each distinct
# value is matched once and then remembered, up to _KNOWN_MAX values per field (a field that
# sees more, e.g. made-up event types, starts over).
_KNOWN_MAX: Final = 1024
_SITE_IDS: Final[set[str]] = set()
_TYPES: Final[set[str]] = set()
_COUNTRIES: Final[set[str]] = set()
_METHODS: Final[set[str]] = set()


def _matches(pattern: re.Pattern[str], value: str, known: set[str]) -> bool:
    """Whether ``value`` has ``pattern``'s shape; remembered in ``known`` if it does."""
    if pattern.fullmatch(value) is None:
        return False
    if len(known) >= _KNOWN_MAX:
        known.clear()
    known.add(value)
    return True


_SHAPES: Final = (
    ("event_id", EVENT_ID),
    ("site_id", SITE_ID),
    ("type", EVENT_TYPE),
    ("visitor_id", VISITOR_ID),
    ("country", COUNTRY),
    ("method", METHOD),
)


def _shape_error(event: Event) -> str:
    """What is wrong with the first misshapen field of ``event``, named as msgspec names fields."""
    for field, pattern in _SHAPES:
        value = getattr(event, field)
        if value is not None and pattern.fullmatch(value) is None:
            return f"Expected `str` matching regex {pattern.pattern!r} - at `$.{field}`"
    raise AssertionError("no misshapen field")


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(Event)
_unsupported = re.compile(r"unsupported schema version")


def encode(event: Event) -> bytes:
    """Serialize ``event`` to compact JSON; raise :class:`InvalidEvent` if it is too large."""
    data = _encoder.encode(event)
    if len(data) > MAX_EVENT_BYTES:
        raise InvalidEvent("too_large", f"{len(data)} bytes, limit {MAX_EVENT_BYTES}")
    return data


def decode(data: bytes | bytearray | memoryview | str) -> Event:
    """Parse and validate one event from the wire; raise :class:`InvalidEvent` with a reason."""
    if len(data) > MAX_EVENT_BYTES:
        raise InvalidEvent("too_large", f"{len(data)} bytes, limit {MAX_EVENT_BYTES}")
    try:
        return _decoder.decode(data)
    except msgspec.ValidationError as exc:
        reason = "unsupported_schema" if _unsupported.search(str(exc)) else "invalid_field"
        raise InvalidEvent(reason, str(exc)) from None
    except msgspec.DecodeError as exc:
        raise InvalidEvent("malformed_json", str(exc)) from None


def validate(event: Event) -> Event:
    """Re-check an event built in Python (constructors do not run type constraints)."""
    return decode(encode(event))


def event_key(event: Event) -> bytes:
    """Partition key: one visitor's events stay on one partition, in order."""
    return (event.visitor_id or event.event_id).encode()


def new_event_id() -> str:
    """A fresh time-ordered event id (UUIDv7, lower-case canonical form)."""
    return str(uuid_utils.uuid7())


def to_builtins(event: Event) -> dict[str, object]:
    """The event as plain dicts/lists, e.g. for pymongo or a Spark Row."""
    return msgspec.to_builtins(event)
