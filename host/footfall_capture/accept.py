"""The one ingestion step: every draft, from any entry point, is accepted here.

The collector's beacon, pixel and batch API, the ``import_events`` command and the host
middleware (on its background thread) all build a :class:`~footfall_capture.enrich.pipeline.Draft`
and call :func:`accept`, which enriches it, validates the event once and hands it to a
:class:`Sink`. An event that breaks the schema goes to the sink's invalid-events topic with
its reason, whichever path it came from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

import msgspec

from footfall_capture.enrich.pipeline import Draft, Drop, SiteContext, Step, enrich
from footfall_capture.enrich.steps import DEFAULT_STEPS
from footfall_capture.events import Event, InvalidEvent, encode, event_key


class Sink(Protocol):
    """Where accepted events go (:class:`~footfall_capture.sink.KafkaSink` in production)."""

    def send_raw(self, data: bytes, key: bytes) -> str:
        """Take one encoded event; return ``"queued"`` or ``"spooled"``, or raise
        :class:`~footfall_capture.sink.SinkUnavailable` when it can do neither."""
        ...

    def send_invalid(self, data: bytes, error: InvalidEvent) -> None:
        """Record an event that failed validation, with its reason (best effort)."""
        ...


class NullSink:
    """A sink that takes every event and keeps none: for checking events without sending them."""

    def send_raw(self, data: bytes, key: bytes) -> str:
        return "queued"

    def send_invalid(self, data: bytes, error: InvalidEvent) -> None:
        pass


@dataclass
class MemorySink:
    """A sink that keeps what it is given in memory, for tests."""

    events: list[tuple[bytes, bytes]] = field(default_factory=list)  # (key, encoded event)
    invalid: list[tuple[bytes, str]] = field(default_factory=list)  # (payload, reason)

    def send_raw(self, data: bytes, key: bytes) -> str:
        self.events.append((key, data))
        return "queued"

    def send_invalid(self, data: bytes, error: InvalidEvent) -> None:
        self.invalid.append((data, error.reason))


class Accepted(NamedTuple):
    """What became of an accepted draft (a named tuple: one is made for every event)."""

    status: str  # "queued" | "spooled" | "ignored"
    event_id: str
    reason: str | None = None  # why an ignored event was dropped (a DropReason value)


def accept(draft: Draft, ctx: SiteContext, sink: Sink, steps: Sequence[Step] = DEFAULT_STEPS) -> Accepted:
    """Enrich ``draft`` for the site ``ctx`` describes (``steps``: the default ones, or
    ``IMPORTED_STEPS`` for an export's events), validate the event and send it to ``sink``.

    A draft a step drops is ``"ignored"`` with the reason. An invalid event is recorded with
    ``sink.send_invalid`` and then raised as :class:`InvalidEvent`; the sink's
    ``SinkUnavailable`` propagates."""
    try:
        event = enrich(draft, ctx, steps)
        data = encode(event)
    except Drop as drop:
        return Accepted("ignored", draft.event_id, drop.reason.value)
    except InvalidEvent as exc:
        # A too large event is not copied to the invalid topic: its reason says all there is.
        sink.send_invalid(b"" if exc.reason == "too_large" else _fields_json(draft), exc)
        raise
    return Accepted(sink.send_raw(data, event_key(event)), event.event_id)


def _fields_json(draft: Draft) -> bytes:
    """The draft's event fields as JSON (never its IP or User-Agent), for the invalid topic."""
    fields = {name: getattr(draft, name) for name in Event.__struct_fields__}
    try:
        return msgspec.json.encode({name: value for name, value in fields.items() if value is not None})
    except ValueError:  # e.g. a lone surrogate, which JSON cannot carry: the reason still goes
        return b""
