"""The enrichment pipeline: turn a :class:`Draft` (what the HTTP boundary accepted, plus the
client's IP and User-Agent held in memory only) into a schema-v1 :class:`~footfall_capture.events.Event`.

Each step is a plain function ``(Draft, SiteContext) -> Draft`` with no I/O: it fills in
derived fields, or raises :class:`Drop` with a :class:`DropReason` when the event must not
be recorded. :func:`enrich` runs the steps in order and builds the event; the IP and the
raw User-Agent never leave the :class:`Draft` (invariant 5: no raw IP stored anywhere).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import ClassVar

import msgspec

from footfall_capture.enrich.addresses import IPAddress, ParsedIP, parse, parse_ip
from footfall_capture.events import SCHEMA_VERSION, Event, InvalidEvent, UserAgent, Utm


class DropReason(StrEnum):
    """Why an accepted request produced no event (counted per reason, never an error)."""

    DO_NOT_TRACK = "do_not_track"  # the visitor asked not to be tracked and the site honours it
    BOT = "bot"  # a crawler, on a site that drops bots instead of flagging them
    SAMPLED_OUT = "sampled_out"  # outside the site's sampling rate
    EXCLUDED = "excluded"  # an excluded path or host


class Drop(Exception):  # a control-flow signal, not an error
    """Raised by a step to drop the event; carries the reason."""

    def __init__(self, reason: DropReason) -> None:
        super().__init__(reason.value)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class SiteContext:
    """What the steps need to know about the site the event belongs to."""

    site_id: str
    domains: tuple[str, ...] = ()  # the site's own host names: referrers from them are "internal"
    respect_dnt: bool = True
    drop_bots: bool = False  # default: keep bots, flagged ua.is_bot, so the batch can count them apart
    salt: bytes = b""  # the site's secret salt of the day (visitor.site_salt), keying the visitor id
    query_params: frozenset[str] = frozenset()  # kept in page URLs besides urls.KEPT_PARAMS (lower-case)


@dataclass(slots=True)
class Draft:
    """An event under construction.

    ``ip`` and ``user_agent`` are the client's, used by steps in memory and never copied
    into the :class:`Event`; everything else maps one to one onto event fields.
    """

    schema: ClassVar[int] = SCHEMA_VERSION  # read by to_event, like the fields
    site_id: str
    type: str
    ts: int
    received_at: int
    event_id: str
    url: str | None = None
    title: str | None = None
    referrer: str | None = None
    props: dict[str, str | int | float | bool | None] | None = None
    method: str | None = None
    status: int | None = None
    duration_ms: float | None = None
    # Request facts, in memory only.
    ip: str | None = field(default=None, repr=False)
    user_agent: str = field(default="", repr=False)
    dnt: bool = False
    # Derived by steps.
    host: str | None = None
    path: str | None = None
    ref_domain: str | None = None
    ref_type: str | None = None
    utm: Utm | None = None
    ua: UserAgent | None = None
    country: str | None = None
    visitor_id: str | None = None
    # ``ip`` parsed, with the text it was parsed from (see :meth:`address` and :meth:`parsed_ip`).
    _address: tuple[str, IPAddress | None] | None = field(default=None, init=False, repr=False, compare=False)
    _parsed: tuple[str, ParsedIP | None] | None = field(default=None, init=False, repr=False, compare=False)

    def address(self) -> IPAddress | None:
        """``ip`` as an address (``None`` if it is none), parsed once per value: geolocation
        and the visitor id both need it, and parsing is a good part of their cost."""
        ip, memo = self.ip, self._address
        if memo is None or memo[0] is not ip:  # parsed from another value, or never
            if ip is None:
                return None
            memo = self._address = (ip, parse_ip(ip.strip()))
        return memo[1]

    def parsed_ip(self) -> ParsedIP | None:
        """:meth:`address` as a :class:`~footfall_capture.enrich.addresses.ParsedIP` (what the steps
        use: cheaper than an ``ipaddress`` object), parsed once per value likewise."""
        ip, memo = self.ip, self._parsed
        if memo is None or memo[0] is not ip:
            if ip is None:
                return None
            memo = self._parsed = (ip, parse(ip.strip()))
        return memo[1]

    def set_address(self, parsed: ParsedIP | None) -> None:
        """Set ``ip`` to an address parsed already: its canonical text, with ``parsed`` as what
        :meth:`parsed_ip` returns for it (the steps do not parse it again); ``None``: no IP."""
        self.ip = None if parsed is None else parsed.text
        self._parsed = None if parsed is None else (self.ip, parsed)

    def forget_ip(self) -> None:
        """Erase the client's IP and User-Agent (and the parsed address) from the draft."""
        self.ip = None
        self.user_agent = ""
        self._address = None
        self._parsed = None

    def to_event(self) -> Event:
        """The finished event (no IP, no raw User-Agent), validated against the event schema:
        raises :class:`~footfall_capture.events.InvalidEvent` (``invalid_field``) if a field
        breaks it. ``utm`` and ``ua`` are validated where their steps build them."""
        try:
            return msgspec.convert(self, Event, from_attributes=True)
        except msgspec.ValidationError as exc:
            raise InvalidEvent("invalid_field", str(exc)) from None


Step = Callable[[Draft, SiteContext], Draft]


def enrich(draft: Draft, ctx: SiteContext, steps: Sequence[Step]) -> Event:
    """Run ``steps`` in order and return the validated event; raise :class:`Drop` to drop it, or
    :class:`~footfall_capture.events.InvalidEvent` if the result breaks the event schema (e.g. a
    page view whose URL is not an http(s) URL has none left after canonicalization)."""
    for step in steps:
        draft = step(draft, ctx)
    return draft.to_event()
