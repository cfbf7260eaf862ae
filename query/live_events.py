"""The dashboard's Live events: a viewer's poll of this process's live hub (realtime/live_hub.py),
with its filters checked, and the line a row is shown as."""

from __future__ import annotations

from functools import cache
from typing import Any

from footfall.config import footfall_config
from footfall_capture.events import EVENT_TYPE
from realtime.live_hub import EVENTS, REFUSED, LiveHub, Poll
from realtime.live_tail import LogTail
from realtime.tail_lines import TailFilter, text_line

__all__ = ["EVENTS", "REFUSED", "BadFilter", "Poll", "get_live_hub", "line", "poll"]
MOST_PATH_GLOB = 200


class BadFilter(ValueError):
    """A filter a viewer typed that cannot be used; the message says why."""


@cache
def get_live_hub() -> LiveHub:
    cfg = footfall_config()
    topics = {EVENTS: cfg.events_topic, REFUSED: cfg.invalid_topic}
    return LiveHub(lambda kind: LogTail(cfg, topics[kind]))


def poll(site_id: str, kind: str, event_type: str | None, path: str | None, cursor_us: int | None) -> Poll:
    """The site's events (``kind`` EVENTS) or refused events (REFUSED) after ``cursor_us``."""
    event_type, path = (event_type or "").strip() or None, (path or "").strip() or None
    if event_type is not None and EVENT_TYPE.fullmatch(event_type) is None:
        raise BadFilter(f"{event_type!r} is not an event type (letters, digits, '_', '.', ':', '-')")
    if path is not None and (len(path) > MOST_PATH_GLOB or not path.startswith(("/", "*"))):
        raise BadFilter("a path starts with / (or *), as /blog/* does")
    wanted = TailFilter(site_id, event_type, path)
    return get_live_hub().poll(kind, wanted, cursor_us, footfall_config().live_events_per_s)


def line(row: dict[str, Any]) -> str:
    """A row as one line of text."""
    return text_line(row)
