"""Where goals' converting visitors came from, computed in plain Python from generated events,
independently of the product's code (the meaning is docs/reports.md's "Where a goal's converting
visitors came from"), and the API's goal-filtered breakdowns checked against it."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable

from footfall.vocabulary import ref_label
from footfall_capture.events import Event
from tests.integration.api.report_truth import GAP_MS, GOALS, Goal
from tests.integration.batch.truth import local_day

# The API dimensions checked, each with how the truth reads it off an entry page view.
DIMENSIONS: dict[str, Callable[[Event], str | None]] = {
    "referrers": lambda e: ref_label(e.ref_domain, e.referrer),
    "ref_types": lambda e: e.ref_type,
    "utm_campaigns": lambda e: e.utm.campaign if e.utm else None,
    "entry_pages": lambda e: e.path,
    "countries": lambda e: e.country,
    "browsers": lambda e: e.ua.browser if e.ua else None,
    "devices": lambda e: e.ua.device if e.ua else None,
}


def first_entries(humans: Iterable[Event], tz: str) -> dict[tuple[str, str], Event]:
    """Per (local day, visitor): the entry page view of the visitor's first session starting that
    day (sessions: page views in (ts, event_id) order, a new one after a gap over 30 minutes)."""
    views = sorted((e for e in humans if e.type == "pageview" and e.visitor_id),
                   key=lambda e: (e.visitor_id, e.ts, e.event_id))  # fmt: skip
    entries: dict[tuple[str, str], Event] = {}
    previous: Event | None = None
    for view in views:
        assert view.visitor_id is not None
        if previous is None or previous.visitor_id != view.visitor_id or view.ts - previous.ts > GAP_MS:
            entries.setdefault((local_day(view.ts, tz), view.visitor_id), view)
        previous = view
    return entries


def goal_sources(humans: list[Event], goal: Goal, tz: str, days: Iterable[str],
                 read: Callable[[Event], str | None]) -> list[dict[str, object]]:  # fmt: skip
    """The rows the API should answer for ``goal`` over ``days``, ranked as it ranks them."""
    wanted = set(days)
    entries = first_entries(humans, tz)
    conversions: dict[tuple[str, str], int] = defaultdict(int)
    for e in humans:
        day = local_day(e.ts, tz)
        if e.visitor_id and day in wanted and goal.reached_by(e):
            conversions[(day, e.visitor_id)] += 1
    converting: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    base: dict[str, int] = defaultdict(int)
    for (day, visitor), entry in entries.items():
        value = read(entry)
        if day not in wanted or value is None:
            continue
        base[value] += 1
        if (count := conversions.get((day, visitor))) is not None:
            converting[value][0] += 1
            converting[value][1] += count
    rows = [{"value": value, "visitors": n, "conversions": c, "conversion_rate": round(n / base[value], 6)}
            for value, (n, c) in converting.items()]  # fmt: skip
    return sorted(rows, key=lambda r: (-r["visitors"], -r["conversions"], r["value"]))  # type: ignore[operator]


def check_goal_sources(get: Callable[..., dict], humans: list[Event], tz: str, settled: list[str], today: str,
                       goal_ids: dict[str, str]) -> int:  # fmt: skip
    """Every goal's breakdown by each of :data:`DIMENSIONS` over the ``settled`` days equals the
    truth, and today is reported missing, not counted; returns the number of rows checked.
    ``humans``: the distinct human events (:func:`report_truth.distinct_humans`)."""
    checked = 0
    for goal in GOALS:
        for api, read in DIMENSIONS.items():
            body = get(f"breakdown/{api}", goal=goal_ids[goal.name], limit=1000, **{"from": settled[0], "to": today})
            want = goal_sources(humans, goal, tz, settled, read)
            assert body["results"] == want, (goal.name, api)
            assert body["total"] == len(want), (goal.name, api)
            assert body["sources"]["batch"]["days"] == settled
            checked += len(want)
        body = get("breakdown/referrers", goal=goal_ids[goal.name], **{"from": today})
        assert body["results"] == [], goal.name
        assert body["sources"]["realtime"]["buckets"] == 0, goal.name
        assert body["sources"]["missing"]["buckets"] > 0, goal.name
    return checked
