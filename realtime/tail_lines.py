"""What the live event tail shows, and of which events: pure, no Kafka.

* :class:`TailFilter` picks a site's events, optionally of one type and on paths matching a glob.
* :func:`tail_row` is the part of an event a person watching sees: its time, type, path,
  referrer, country, device and browser, a custom event's name and props, and the visitor id
  cut to 8 characters (enough to follow one visitor for a while, not a key to the counters).
  There is no IP to show: events hold none.
* :func:`invalid_row` is the same for an event the pipeline refused, with its reason.
* :func:`tail_item` turns a record read from either topic into what the tail keeps of it, and
  :meth:`TailItem.passes` says whether a viewer's filter wants it: the CLI and the dashboard
  share both.
* :class:`Sampler` keeps a viewer's rate bounded: past ``max_per_s`` it shows 1 event in N,
  N following the rate of the second before, and says so.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from footfall_capture.events import Event, InvalidEvent, decode

VISITOR_SHOWN = 8  # characters of the visitor id shown
BUILTIN_TYPES = frozenset({"pageview", "engagement", "request"})  # any other type is a custom event's name
PAYLOAD_SHOWN = 300  # characters of a refused event's payload shown


@dataclass(frozen=True)
class TailFilter:
    """Events of ``site_id``, of ``type`` if given, on a path matching ``path`` (``*`` matches
    anything, ``/`` included; the whole path must match) if given."""

    site_id: str | None
    type: str | None = None
    path: str | None = None
    _path_re: re.Pattern[str] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.path is not None:
            object.__setattr__(self, "_path_re", re.compile(fnmatch.translate(self.path)))

    def matches(self, event: Event) -> bool:
        if self.site_id is not None and event.site_id != self.site_id:
            return False
        if self.type is not None and event.type != self.type:
            return False
        return self._path_re is None or (event.path is not None and self._path_re.match(event.path) is not None)


def _time(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def tail_row(event: Event) -> dict[str, Any]:
    """The fields of ``event`` the tail shows (see the module's docstring)."""
    ua = event.ua
    return {
        "time": _time(event.ts),
        "site": event.site_id,
        "type": event.type,
        "path": event.path,
        "host": event.host,
        "referrer": event.ref_domain or event.referrer,
        "ref_type": event.ref_type,
        "country": event.country,
        "device": ua.device if ua else None,
        "browser": ua.browser if ua else None,
        "bot": bool(ua and ua.is_bot),
        "event": None if event.type in BUILTIN_TYPES else event.type,
        "props": event.props,
        "visitor": event.visitor_id[:VISITOR_SHOWN] if event.visitor_id else None,
    }


def invalid_row(payload: bytes, headers: dict[str, str], timestamp_ms: int, site_id: str | None) -> dict[str, Any]:
    """What the tail shows of an event on the invalid-events topic: when, for which site (when
    its payload names one), why, who refused it, and the start of what was sent."""
    return {
        "time": _time(timestamp_ms),
        "site": site_id,
        "reason": headers.get("reason"),
        "detail": headers.get("detail"),
        "refused_by": headers.get("source"),
        "payload": payload[:PAYLOAD_SHOWN].decode("utf-8", "replace"),
    }


def payload_site(payload: bytes) -> str | None:
    """The ``site_id`` a refused payload names, if it is a JSON object with one."""
    try:
        value = json.loads(payload)
    except (ValueError, UnicodeDecodeError):
        return None
    site = value.get("site_id") if isinstance(value, dict) else None
    return site if isinstance(site, str) else None


@dataclass(frozen=True)
class TailItem:
    """A record as the tail keeps it: its site, its row, and its decoded event (None for a refused one)."""

    site_id: str | None
    row: dict[str, Any]
    event: Event | None

    def passes(self, wanted: TailFilter) -> bool:
        """Whether ``wanted`` picks this record; of a refused one only the site is known."""
        if self.event is None:
            return wanted.site_id is None or self.site_id == wanted.site_id
        return wanted.matches(self.event)


def tail_item(payload: bytes, headers: dict[str, str], timestamp_ms: int, refused: bool) -> TailItem | None:
    """What the tail keeps of a record of the events topic (``refused``: the invalid-events
    topic); None for an undecodable event, which the workers route to the invalid-events topic."""
    if refused:
        site = payload_site(payload)
        return TailItem(site, invalid_row(payload, headers, timestamp_ms, site), None)
    try:
        event = decode(payload)
    except InvalidEvent:
        return None
    return TailItem(event.site_id, tail_row(event), event)


def text_line(row: dict[str, Any]) -> str:
    """One row as a line of text: time, then the fields that have a value."""
    clock = row["time"][11:23]
    if "reason" in row:
        return f"{clock}  {row['site'] or '?'}  refused: {row['reason']} ({row['detail']})  {row['payload']}"
    parts = [clock, row["type"], row["path"] or "-"]
    if row["referrer"]:
        parts.append(f"from {row['referrer']}")
    parts += [value for value in (row["country"], row["device"], row["browser"]) if value]
    if row["bot"]:
        parts.append("bot")
    if row["props"]:
        parts.append(" ".join(f"{k}={v}" for k, v in row["props"].items()))
    if row["visitor"]:
        parts.append(f"visitor {row['visitor']}")
    return "  ".join(parts)


class Sampler:
    """Shows every event up to ``max_per_s`` a second; past it, 1 in N, where N is the rate of
    the second before divided by ``max_per_s`` (rounded up), and never more than ``max_per_s``
    in any second (a burst is cut at once, before the next second sets N)."""

    def __init__(self, max_per_s: int) -> None:
        self.max_per_s = max_per_s
        self.one_in = 1
        self._second: int | None = None
        self._seen = 0  # matching events in the current second
        self._shown = 0  # of them shown
        self._count = 0

    def take(self, now_s: float) -> tuple[bool, str | None]:
        """Whether to show a matching event arriving at ``now_s``, and a note when the sampling
        changed with it (``"showing 1 in 7"``, ``"showing every event"``)."""
        second, note = int(now_s), None
        if second != self._second:
            rate = self._seen if self._second == second - 1 else 0
            one_in = max(1, math.ceil(rate / self.max_per_s))
            if one_in != self.one_in:
                note = f"showing 1 in {one_in}" if one_in > 1 else "showing every event"
            self.one_in, self._second, self._seen, self._shown = one_in, second, 0, 0
        self._seen += 1
        self._count += 1
        show = self._count % self.one_in == 0 and self._shown < self.max_per_s
        self._shown += show
        return show, note
