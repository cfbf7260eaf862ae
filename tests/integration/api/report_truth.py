"""Goals, funnels, custom events and engagement computed in plain Python from generated
events, independently of the product's code, to check the rollup, the speed layer and the
API against (the semantics are those of docs/reports.md and the API docs)."""

from __future__ import annotations

import random
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

import msgspec

from footfall.vocabulary import ref_label
from footfall_capture.events import Event, new_event_id
from tests.integration.batch.truth import local_day

CAP_MS = 30 * 60_000  # one engagement report counts at most 30 minutes
GAP_MS = 30 * 60_000  # the session gap funnels use
NOT_STEPS = ("engagement", "request")


@dataclass(frozen=True)
class Goal:
    """A goal as the test defines it: a page pattern (``fnmatch``, no ``?`` or ``[`` in the
    test's paths) or an event name with an optional property value."""

    name: str
    path: str = ""
    event: str = ""
    prop: str = ""
    value: str = ""

    def body(self) -> dict[str, str]:
        if self.path:
            return {"name": self.name, "kind": "page", "path": self.path}
        return {"name": self.name, "kind": "event", "event": self.event, "prop": self.prop, "value": self.value}

    def reached_by(self, e: Event) -> bool:
        if self.path:
            return e.type == "pageview" and e.path is not None and fnmatchcase(e.path, self.path)
        if e.type != self.event:
            return False
        return not self.prop or str((e.props or {}).get(self.prop)) == self.value


def with_reports(views: list[Event], rng: random.Random) -> list[Event]:
    """Engagement reports for about half of ``views`` (1 to 3 each, the running max scroll
    depth, now and then an engaged time over the cap), and a ``signup`` custom event after
    about a third of the page views of /pricing, 5 s to 40 min later, plan pro or free."""
    out: list[Event] = []
    for view in views:
        if rng.random() < 0.5:
            at, depth = view.ts, 0
            for _ in range(rng.randint(1, 3)):
                engaged = rng.choice([rng.randrange(1_000, 120_000), 45 * 60_000]) if rng.random() < 0.05 else (
                    rng.randrange(1_000, 120_000))  # fmt: skip
                at += engaged
                depth = min(100, depth + rng.randrange(0, 60))
                props = {"engaged_ms": engaged, "scroll_depth": depth, "pageview_id": view.event_id}
                out.append(msgspec.structs.replace(view, event_id=new_event_id(), type="engagement", ts=at,
                                                   received_at=at, title=None, props=props))  # fmt: skip
        if view.path == "/pricing" and rng.random() < 0.35:
            at = view.ts + rng.choice([rng.randrange(5_000, 600_000), rng.randrange(600_000, 2_400_000)])
            plan = rng.choice(["pro", "pro", "free"])
            out.append(msgspec.structs.replace(view, event_id=new_event_id(), type="signup", ts=at, received_at=at,
                                               title=None, referrer=None, ref_domain=None, ref_type=None,
                                               utm=None, props={"plan": plan}))  # fmt: skip
    return out


def distinct_humans(events: Iterable[Event]) -> list[Event]:
    first: dict[str, Event] = {}
    for e in events:
        if e.event_id not in first or e.received_at < first[e.event_id].received_at:
            first[e.event_id] = e
    return [e for e in first.values() if not (e.ua and e.ua.is_bot)]


def goal_truth(events: list[Event], goal: Goal, tz: str) -> dict[str, tuple[int, int]]:
    """Per local day: (conversions, distinct visitors converting)."""
    hits: dict[str, list[Event]] = defaultdict(list)
    for e in events:
        if goal.reached_by(e):
            hits[local_day(e.ts, tz)].append(e)
    return {day: (len(es), len({e.visitor_id for e in es})) for day, es in hits.items()}


def custom_truth(events: list[Event], tz: str) -> dict[str, dict[str, tuple[int, int]]]:
    """Per day, per custom event name: (events, visitors)."""
    by: dict[str, dict[str, list[Event]]] = defaultdict(lambda: defaultdict(list))
    for e in events:
        if e.type not in ("pageview", "request", "engagement"):
            by[local_day(e.ts, tz)][e.type].append(e)
    return {d: {n: (len(es), len({e.visitor_id for e in es})) for n, es in names.items()} for d, names in by.items()}


@dataclass
class Engaged:
    engaged_ms: int = 0
    reports: int = 0
    scroll: dict[str, int] | None = None  # page view id -> deepest scroll


def engagement_truth(events: list[Event], tz: str, by: str) -> dict[str, dict[str, Engaged]]:
    """Per day, per page (``by="page"``) or referrer label (``"ref"``): capped engaged time,
    reports, and the deepest scroll of each page view that reported one."""
    out: dict[str, dict[str, Engaged]] = defaultdict(lambda: defaultdict(Engaged))
    for e in events:
        if e.type != "engagement":
            continue
        props = e.props or {}
        key = e.path if by == "page" else ref_label(e.ref_domain, e.referrer)
        row = out[local_day(e.ts, tz)][key]
        row.engaged_ms += min(max(int(props["engaged_ms"]), 0), CAP_MS)
        row.reports += 1
        row.scroll = row.scroll or {}
        view = str(props["pageview_id"])
        row.scroll[view] = max(row.scroll.get(view, 0), int(props["scroll_depth"]))
    return out


def _attempt(
    own: list[Event], sessions: list[int], first: int, steps: Sequence[Goal], window_minutes: int, strict: bool
) -> list[int]:
    """The step times of the attempt starting at ``own[first]``: each next step the earliest
    later event reaching it (strict: the very next event) within the session or window."""

    def inside(j: int) -> bool:
        if window_minutes:
            return own[j].ts - own[first].ts <= window_minutes * 60_000
        return sessions[j] == sessions[first]

    times, at = [own[first].ts], first
    for step in steps[1:]:
        if strict:
            found = at + 1 if at + 1 < len(own) and inside(at + 1) and step.reached_by(own[at + 1]) else None
        else:
            found = next((j for j in range(at + 1, len(own)) if inside(j) and step.reached_by(own[j])), None)
        if found is None:
            break
        times.append(own[found].ts)
        at = found
    return times


def funnel_truth(
    events: list[Event], steps: Sequence[Goal], tz: str, window_minutes: int = 0, strict: bool = False
) -> dict[str, tuple[list[int], list[float | None]]]:
    """Per local day of the first step: visitors reaching each step and the exact median time
    (ms) from the step before, by the best attempt of each visitor (furthest, then earliest)."""
    per_visitor: dict[str, list[Event]] = defaultdict(list)
    for e in events:
        if e.type not in NOT_STEPS:
            per_visitor[e.visitor_id or e.event_id].append(e)
    reached: dict[str, list[int]] = defaultdict(lambda: [0] * len(steps))
    gaps: dict[str, list[list[int]]] = defaultdict(lambda: [[] for _ in steps])
    for own in per_visitor.values():
        own.sort(key=lambda e: (e.ts, e.event_id))
        session, sessions = 0, []
        for i, e in enumerate(own):
            if i and e.ts - own[i - 1].ts > GAP_MS:
                session += 1
            sessions.append(session)
        best: dict[str, tuple[int, int, list[int]]] = {}  # per local day of the first step
        for first in range(len(own)):
            if steps[0].reached_by(own[first]):
                times = _attempt(own, sessions, first, steps, window_minutes, strict)
                day = local_day(own[first].ts, tz)
                if day not in best or len(times) > best[day][0]:
                    best[day] = (len(times), own[first].ts, times)
        for day, (count, _, times) in best.items():
            for k in range(count):
                reached[day][k] += 1
                if k:
                    gaps[day][k].append(times[k] - times[k - 1])
    return {
        day: (counts, [None] + [statistics.median(g) if g else None for g in gaps[day][1:]])
        for day, counts in reached.items()
    }


GOALS = (
    Goal("Blog", path="/blog/*"),
    Goal("Pricing", path="/pricing"),
    Goal("Pro sign-up", event="signup", prop="plan", value="pro"),
)
FUNNELS = (  # (name, steps as indexes into GOALS, window minutes, strict)
    ("Pricing to pro, one session", (1, 2), 0, False),
    ("Pricing to pro, 10 minutes, strict", (1, 2), 10, True),
)


def within_hll(got: int, want: int) -> bool:
    return abs(got - want) <= max(2, want * 0.03)


def _sum_days(per_day: dict, days: Iterable[str]) -> tuple[int, int]:
    pairs = [per_day.get(d, (0, 0)) for d in days]
    return sum(p[0] for p in pairs), sum(p[1] for p in pairs)


def check_reports(get: Callable[..., dict], events: list[Event], tz: str, settled: list[str], today: str,
                  goal_ids: dict[str, str], funnel_ids: dict[str, str], visitors: dict[str, int]) -> None:  # fmt: skip
    """The API's goals, funnels, custom events, properties and engagement equal the truth:
    exactly over the ``settled`` days, conversions and engaged time exactly and visitors
    within HyperLogLog error over ``today`` (realtime). ``get(path, **params)`` answers JSON;
    ``visitors``: the true visitors per day (the conversion rates' base)."""
    humans = distinct_humans(events)
    whole = {"from": settled[0], "to": today}
    now = {"from": today}

    body = get("goals", **whole)
    rows = {r["name"]: r for r in body["results"]}
    for goal in GOALS:
        want = _sum_days(goal_truth(humans, goal, tz), settled)
        assert (rows[goal.name]["events"], rows[goal.name]["visitors"]) == want, goal.name
        base = sum(visitors[d] for d in settled)
        assert rows[goal.name]["conversion_rate"] == round(want[1] / base, 6), goal.name
    body = get("goals", **now)
    rows = {r["name"]: r for r in body["results"]}
    for goal in GOALS:
        conversions, uniques = _sum_days(goal_truth(humans, goal, tz), [today])
        assert rows[goal.name]["events"] == conversions, goal.name
        assert within_hll(rows[goal.name]["visitors"], uniques), (goal.name, rows[goal.name]["visitors"], uniques)

    for name, steps, window, strict in FUNNELS:
        truth = funnel_truth(humans, [GOALS[i] for i in steps], tz, window, strict)
        body = get(f"funnels/{funnel_ids[name]}", **whole)
        want = [sum(truth.get(d, ([0] * len(steps), []))[0][k] for d in settled) for k in range(len(steps))]
        assert [s["visitors"] for s in body["steps"]] == want, name
        last = settled[-1]
        body = get(f"funnels/{funnel_ids[name]}", **{"from": last, "to": today})
        counts, medians = truth.get(last, ([0] * len(steps), [None] * len(steps)))
        assert [s["visitors"] for s in body["steps"]] == counts, name
        assert [s["median_ms_from_previous"] for s in body["steps"]] == medians, name

    per_day = custom_truth(humans, tz)
    body = get("breakdown/events", limit=100, **whole)
    want_events = {n: _sum_days({d: per_day.get(d, {}).get(n, (0, 0)) for d in settled}, settled)
                   for d in settled for n in per_day.get(d, {})}  # fmt: skip
    assert {r["value"]: (r["events"], r["visitors"]) for r in body["results"]} == want_events
    body = get("breakdown/events", limit=100, **now)
    got = {r["value"]: (r["events"], r["visitors"]) for r in body["results"]}
    assert {n: e for n, (e, _) in got.items()} == {n: e for n, (e, _) in per_day.get(today, {}).items()}
    for name, (_, uniques) in per_day.get(today, {}).items():
        assert within_hll(got[name][1], uniques), name

    plans: dict[str, list[Event]] = defaultdict(list)
    for e in humans:
        if e.type == "signup" and local_day(e.ts, tz) in settled and e.props and "plan" in e.props:
            plans[str(e.props["plan"])].append(e)
    body = get("events/signup/properties/plan", **whole)
    want_plans = {p: (len(es), sum(len({e.visitor_id for e in es if local_day(e.ts, tz) == d}) for d in settled))
                  for p, es in plans.items()}  # fmt: skip
    assert {r["value"]: (r["events"], r["visitors"]) for r in body["results"]} == want_plans

    for dim, api, metrics in (("page", "pages", "pageviews,time_on_page,scroll_depth,engaged_time"),
                              ("ref", "referrers", "engaged_time")):  # fmt: skip
        truth_by = engagement_truth(humans, tz, dim)
        merged: dict[str, Engaged] = defaultdict(Engaged)
        for d in settled:
            for key, row in truth_by.get(d, {}).items():
                merged[key].engaged_ms += row.engaged_ms
                merged[key].scroll = {
                    **(merged[key].scroll or {}),
                    **{f"{d}|{k}": v for k, v in (row.scroll or {}).items()},
                }
        body = get(f"breakdown/{api}", limit=1000, metrics=metrics, **whole)
        rows = {r["value"]: r for r in body["results"]}
        for key, row in merged.items():
            assert rows[key]["engaged_time"] == round(row.engaged_ms / 1000, 3), (dim, key)
            if dim == "page":
                scroll = list((row.scroll or {}).values())
                assert rows[key]["scroll_depth"] == (round(sum(scroll) / len(scroll), 3) if scroll else None), key
                views = rows[key]["pageviews"]
                assert rows[key]["time_on_page"] == (round(row.engaged_ms / 1000 / views, 3) if views else None), key
        today_truth = truth_by.get(today, {})
        body = get(f"breakdown/{api}", limit=1000, metrics="engaged_time", **now)
        rows = {r["value"]: r for r in body["results"]}
        for key, row in today_truth.items():
            if key in rows:  # a page or referrer without page views today is not ranked
                assert rows[key]["engaged_time"] == round(row.engaged_ms / 1000, 3), (dim, key)
