"""An independent, plain-Python computation of the rollups, to check the Spark job against."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable
from zoneinfo import ZoneInfo

from footfall.goals import GoalSpec
from footfall.vocabulary import MAX_ENGAGED_MS, ref_label
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
        if e.visitor_id and e.type != "engagement":  # a report alone makes no visitor
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


def conversions(events: Iterable[Event], tz: str, days: set[str], goals: Iterable[GoalSpec]) -> dict[str, dict]:
    """Per local day: custom events per name, goal conversions, engaged time (site and per page).

    Written from the contract (footfall.vocabulary), not from the Spark job: custom events are
    human events whose type is not a page view, request or engagement report; a report's
    engaged time is capped at MAX_ENGAGED_MS, a missing or negative one counts 0."""
    distinct: dict[str, Event] = {}
    for e in events:
        if e.event_id not in distinct or e.received_at < distinct[e.event_id].received_at:
            distinct[e.event_id] = e
    goals = list(goals)
    out: dict[str, dict] = {
        d: {"events": defaultdict(lambda: [0, set()]), "goals": {g.goal_id: [0, set()] for g in goals},
            "engaged_ms": 0, "engagements": 0, "page_engaged_ms": defaultdict(int)}
        for d in days
    }  # fmt: skip
    for e in distinct.values():
        day = local_day(e.ts, tz)
        if day not in out or (e.ua and e.ua.is_bot):
            continue
        stats = out[day]
        if e.type not in ("pageview", "request", "engagement"):
            stats["events"][e.type][0] += 1
            if e.visitor_id:
                stats["events"][e.type][1].add(e.visitor_id)
        if e.type == "engagement":
            ms = (e.props or {}).get("engaged_ms")
            capped = min(max(ms, 0), MAX_ENGAGED_MS) if isinstance(ms, int | float) and not isinstance(ms, bool) else 0
            stats["engaged_ms"] += int(capped)
            stats["engagements"] += 1
            if e.path is not None:
                stats["page_engaged_ms"][e.path] += int(capped)
        for goal in goals:
            if goal.matches(e.type, e.path, e.props):
                stats["goals"][goal.goal_id][0] += 1
                if e.visitor_id:
                    stats["goals"][goal.goal_id][1].add(e.visitor_id)
    for stats in out.values():
        for key in ("events", "goals"):
            stats[key] = {name: (n, len(visitors)) for name, (n, visitors) in stats[key].items()}
        stats["page_engaged_ms"] = dict(stats["page_engaged_ms"])
    return out
