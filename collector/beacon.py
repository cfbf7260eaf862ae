"""The HTTP boundary of collection: validate what a client sent, early, into a :class:`Beacon`.

Pure functions, no Django: a JSON body (``POST /collect``, also as ``text/plain`` from
``navigator.sendBeacon``), pixel query parameters (``GET /p.gif``), or one item of a
server-side batch becomes a :class:`Beacon`, or :class:`BadBeacon` with a reason code and
a message naming the field. :func:`to_draft` then adds the request facts and ``now``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

import msgspec

from footfall.vocabulary import ENGAGED_MS_PROP, ENGAGEMENT, PAGEVIEW_ID_PROP, SCROLL_DEPTH_PROP
from footfall_capture.enrich.pipeline import Draft
from footfall_capture.events import (
    MAX_INPUT_TEXT,
    MAX_PROP_KEY_LENGTH,
    MAX_PROP_VALUE_LENGTH,
    MAX_PROPS,
    MAX_TITLE_LENGTH,
    new_event_id,
)

MAX_BODY_BYTES = 64 * 1024
_MAX_INT64 = 2**63 - 1  # what the archive, Spark and Mongo hold as an integer

_Text = Annotated[str, msgspec.Meta(max_length=MAX_INPUT_TEXT)]
_PropValue = Annotated[str, msgspec.Meta(max_length=MAX_PROP_VALUE_LENGTH)] | int | float | bool | None
_Props = Annotated[
    dict[Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_PROP_KEY_LENGTH)], _PropValue],
    msgspec.Meta(max_length=MAX_PROPS),
]


class BadBeacon(ValueError):
    """A payload the collector refuses (HTTP 400); ``reason`` is a stable code."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


class Beacon(msgspec.Struct, forbid_unknown_fields=False):
    """What a tracker or server sends for one event."""

    site_id: Annotated[str, msgspec.Meta(pattern=r"^[a-z0-9][a-z0-9_\-]{0,63}$")]
    type: Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,63}$")] = "pageview"
    url: _Text | None = None
    referrer: _Text | None = None
    title: _Text | None = None
    event_id: Annotated[str, msgspec.Meta(pattern=r"^[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$")] | None = (
        None
    )
    props: _Props | None = None
    # Only server-side batches may set these (see to_draft's ``ts_window``).
    ts: int | None = None
    ip: Annotated[str, msgspec.Meta(max_length=64)] | None = None
    user_agent: Annotated[str, msgspec.Meta(max_length=MAX_INPUT_TEXT)] | None = None
    method: Annotated[str, msgspec.Meta(pattern=r"^[A-Z]{1,16}$")] | None = None
    status: Annotated[int, msgspec.Meta(ge=100, le=599)] | None = None
    duration_ms: Annotated[float, msgspec.Meta(ge=0)] | None = None
    # A sender holding the site's salt (GET /api/v1/sites/<site>/salts) computes the visitor id
    # itself; its ``ip`` then only places the visitor (a network prefix will do). ``dnt``: the
    # visitor asked not to be tracked, judged by the site's policy here.
    visitor_id: Annotated[str, msgspec.Meta(pattern=r"^[0-9a-f]{32}$")] | None = None
    dnt: bool | None = None

    def __post_init__(self) -> None:
        if self.type == "pageview" and not self.url:
            raise ValueError("a pageview needs a url")
        if self.type == ENGAGEMENT:
            problem = engagement_problem(self.props)
            if problem is not None:
                raise ValueError(problem)


def _int_within(value: object, low: int, high: int) -> bool:
    """True for an integer from ``low`` to ``high`` (JSON true is no number, 5.0 no integer)."""
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def engagement_problem(props: Mapping[str, object] | None) -> str | None:
    """What is wrong with an engagement report's ``props``, naming the property, or None.

    ``engaged_ms`` must be a non-negative integer and ``pageview_id`` a non-empty string;
    ``scroll_depth`` may be absent, else an integer from 0 to 100. Other properties are kept
    as on any event. Large engaged times are valid: the layers cap them (MAX_ENGAGED_MS)."""
    props = props or {}
    engaged = props.get(ENGAGED_MS_PROP)
    if not _int_within(engaged, 0, _MAX_INT64):
        return f"an engagement event needs `props.{ENGAGED_MS_PROP}`, a non-negative integer (got {engaged!r})"
    depth = props.get(SCROLL_DEPTH_PROP, 0)
    if not _int_within(depth, 0, 100):
        return f"`props.{SCROLL_DEPTH_PROP}` of an engagement event must be an integer from 0 to 100 (got {depth!r})"
    pageview_id = props.get(PAGEVIEW_ID_PROP)
    if not isinstance(pageview_id, str) or not pageview_id:
        return f"an engagement event needs `props.{PAGEVIEW_ID_PROP}`, its page view's event_id (got {pageview_id!r})"
    return None


_decoder = msgspec.json.Decoder(Beacon)
_batch_decoder = msgspec.json.Decoder(list[msgspec.Raw])


def _raise(exc: Exception) -> None:
    if isinstance(exc, msgspec.ValidationError):
        raise BadBeacon("invalid_field", str(exc)) from None
    raise BadBeacon("malformed_json", str(exc)) from None


def parse_json(body: bytes) -> Beacon:
    """One beacon from a JSON object body."""
    if not body.strip():
        raise BadBeacon("empty_body", "expected a JSON object")
    try:
        return _decoder.decode(body)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        _raise(exc)
        raise  # unreachable; keeps type checkers content


def parse_batch(body: bytes, limit: int) -> list[Beacon | BadBeacon]:
    """A JSON array of beacons; each item parsed on its own so one bad item spoils no other."""
    try:
        items = _batch_decoder.decode(body)
    except msgspec.ValidationError:
        raise BadBeacon("invalid_field", "expected a JSON array of events") from None
    except msgspec.DecodeError as exc:
        raise BadBeacon("malformed_json", str(exc)) from None
    if not items:
        raise BadBeacon("empty_batch", "expected at least one event")
    if len(items) > limit:
        raise BadBeacon("batch_too_large", f"{len(items)} events, at most {limit} per request")
    out: list[Beacon | BadBeacon] = []
    for raw in items:
        try:
            out.append(_decoder.decode(raw))
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            try:
                _raise(exc)
            except BadBeacon as bad:
                out.append(bad)
    return out


_PIXEL_FIELDS = ("site_id", "type", "url", "referrer", "title", "event_id")


def parse_query(params: Mapping[str, str]) -> Beacon:
    """One beacon from pixel query parameters (same names as the JSON fields)."""
    doc = {name: params[name] for name in _PIXEL_FIELDS if params.get(name)}
    if "site_id" not in doc:
        raise BadBeacon("invalid_field", "Object missing required field `site_id`")
    try:
        return msgspec.convert(doc, Beacon)
    except msgspec.ValidationError as exc:
        raise BadBeacon("invalid_field", str(exc)) from None


def asks_not_to_track(headers: Mapping[str, str]) -> bool:
    """True for ``DNT: 1`` or Global Privacy Control (``Sec-GPC: 1``)."""
    return headers.get("DNT") == "1" or headers.get("Sec-GPC") == "1"


def meta_asks_not_to_track(meta: Mapping[str, object]) -> bool:
    """:func:`asks_not_to_track` on a WSGI environ (Django's ``request.META``): the hot paths
    read META directly, because ``request.headers`` copies every header on first use."""
    return meta.get("HTTP_DNT") == "1" or meta.get("HTTP_SEC_GPC") == "1"


def to_draft(
    beacon: Beacon,
    *,
    now_ms: int,
    ip: str | None,
    user_agent: str,
    dnt: bool,
    ts_window: tuple[int, int] | None = None,
) -> Draft:
    """A :class:`Draft` for enrichment. The client's ``ts`` is honoured only when
    ``ts_window`` = (max age, max skew ahead) in ms is given and it falls inside it."""
    ts = now_ms
    if ts_window is None and (beacon.visitor_id is not None or beacon.dnt is not None):
        raise BadBeacon("invalid_field", "`visitor_id` and `dnt` may only be set by server-side batches")
    if beacon.ts is not None:
        if ts_window is None:
            raise BadBeacon("invalid_field", "`ts` may only be set by server-side batches")
        max_age, max_ahead = ts_window
        if not now_ms - max_age <= beacon.ts <= now_ms + max_ahead:
            raise BadBeacon("ts_out_of_window", f"`ts` must lie within {max_age // 3_600_000} h before now")
        ts = beacon.ts
    return Draft(
        site_id=beacon.site_id,
        type=beacon.type,
        ts=ts,
        received_at=now_ms,
        event_id=(beacon.event_id or new_event_id()).lower(),
        url=beacon.url,
        title=beacon.title[:MAX_TITLE_LENGTH] if beacon.title else None,
        referrer=beacon.referrer or None,
        props=beacon.props or None,
        method=beacon.method,
        status=beacon.status,
        duration_ms=beacon.duration_ms,
        ip=ip,
        user_agent=user_agent,
        dnt=dnt or bool(beacon.dnt),
        visitor_id=beacon.visitor_id,
    )
