"""An independent, plain-Python computation of the rollups, to check the Spark job against."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable
from zoneinfo import ZoneInfo

from footfall.vocabulary import ref_label
from footfall_capture.events import Event

GAP_MS = 30 * 60 * 1000


def local_day(ts: int, tz: str) -> str:
    return dt.datetime.fromtimestamp(ts / 1000, ZoneInfo(tz)).date().isoformat()


def exact(events: Iterable[Event], tz: str, days: set[str]) -> dict[str, dict]:
    """Per local day: page views, visitors, sessions, bounces, visit duration, pages, referrers."""
    distinct: dict[str, Event] = {}
    for e in events:
        if e.event_id not in distinct or e.received_at < distinct[e.event_id].received_at:
            distinct[e.event_id] = e
    humans = [e for e in distinct.values() if not (e.ua and e.ua.is_bot)]
    out: dict[str, dict] = {
        d: {"pageviews": 0, "visitors": set(), "pages": defaultdict(int), "refs": defaultdict(int),
            "sessions": 0, "bounces": 0, "durations": [], "bot_events": 0}
        for d in days
    }  # fmt: skip
    for e in distinct.values():
        if e.ua and e.ua.is_bot and local_day(e.ts, tz) in out:
            out[local_day(e.ts, tz)]["bot_events"] += 1
    for e in humans:
        day = local_day(e.ts, tz)
        if day not in out:
            continue
        if e.visitor_id:
            out[day]["visitors"].add(e.visitor_id)
        if e.type == "pageview":
            out[day]["pageviews"] += 1
            out[day]["pages"][e.path] += 1
            out[day]["refs"][ref_label(e.ref_domain, e.referrer)] += 1
    by_visitor: dict[str, list[Event]] = defaultdict(list)
    for e in humans:
        if e.type == "pageview":
            by_visitor[e.visitor_id].append(e)
    for views in by_visitor.values():
        views.sort(key=lambda e: (e.ts, e.event_id))
        sessions: list[list[Event]] = []
        for e in views:
            if sessions and e.ts - sessions[-1][-1].ts <= GAP_MS:
                sessions[-1].append(e)
            else:
                sessions.append([e])
        for s in sessions:
            day = local_day(s[0].ts, tz)
            if day in out:
                out[day]["sessions"] += 1
                out[day]["bounces"] += len(s) == 1
                out[day]["durations"].append((s[-1].ts - s[0].ts) / 1000)
    for stats in out.values():
        stats["visitors"] = len(stats["visitors"])
        durations = stats.pop("durations")
        stats["visit_duration_s"] = round(sum(durations) / len(durations), 6) if durations else 0.0
        stats["bounce_rate"] = round(stats["bounces"] / stats["sessions"], 6) if stats["sessions"] else 0.0
    return out
