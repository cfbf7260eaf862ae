"""The API bench's site: 90 settled days of rollup documents shaped like the Spark rollup's (``spark_jobs/``,
written by ``historical.store.load_day``) and recent events for the realtime store, with the goals and funnel the
bench defines for it. Pure data: no I/O but :func:`seed`."""

from __future__ import annotations

import bisect
import datetime as dt
import itertools
import math
import random
import statistics
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo

import msgspec

from footfall.demo import DemoTraffic
from footfall.goals import EVENT, FUNNEL_TIME_BOUNDS_MS, PAGE, FunnelSpec, GoalSpec
from footfall.vocabulary import (
    ENGAGED_MS_PROP,
    ENGAGEMENT,
    GOAL_BASE_PREFIX,
    GOAL_SOURCE_DIMENSIONS,
    GOAL_SOURCE_PREFIX,
    MAX_ENGAGED_MS,
    PAGEVIEW_ID_PROP,
    PROP_SEPARATOR,
    REFPAGE_SEPARATOR,
    SCROLL_DEPTH_PROP,
)
from footfall_capture.events import Event, Utm, new_event_id
from historical.buckets import day_buckets
from historical.store import GOAL_SOURCES, DayDocuments, hour_document, load_day
from realtime.merge import HourMerger, closed_hours
from realtime.store import CounterStore

TZ, SEED, DAILY_PAGEVIEWS = "Europe/Berlin", 7, 150_000


def zipf(n: int, s: float) -> list[float]:
    weights = [1.0 / (i + 1) ** s for i in range(n)]
    return [w / sum(weights) for w in weights]


# 40 pages, 12 referrer domains plus direct, most popular first; a referrer -> page pair has a document on days
# with 300 views or more (the local Mongo-wire server scans every document: a larger site measures its scan).
PAGES = ["/", "/pricing", "/docs", "/blog", "/about", "/contact", "/signup", "/login"]
PAGES += [f"/{('blog', 'docs', 'guides', 'changelog')[i % 4]}/post-{i}" for i in range(8, 40)]
REFS = [("(direct)", "direct"), ("google.com", "search"), ("bing.com", "search"), ("news.ycombinator.com", "social"),
        ("reddit.com", "social"), ("t.co", "social"), ("duckduckgo.com", "search"), ("mail.google.com", "email"),
        ("linkedin.com", "social"), ("dev-weekly.example", "other"), ("lobste.rs", "social"),
        ("outlook.live.com", "email"), ("awesome-lists.example", "other")]  # fmt: skip
PAGE_SHARE, REF_SHARE, PAIR_MIN = zipf(len(PAGES), 1.05), [0.33, *[0.67 * w for w in zipf(len(REFS) - 1, 1.1)]], 300
# The rollup's other breakdowns, which no endpoint measured here reads but the store holds: values per day.
OTHER_DIMENSIONS = {"ref_type": 5, "refurl": 30, "entry_page": 40, "utm_source": 12, "utm_medium": 5,
                    "utm_campaign": 25, "browser": 8, "os": 6, "device": 3, "country": 40}  # fmt: skip
HOUR_SHAPE = [0.25, 0.18, 0.14, 0.12, 0.13, 0.2, 0.38, 0.62, 0.9, 1.1, 1.22, 1.28,
              1.3, 1.32, 1.35, 1.36, 1.33, 1.28, 1.22, 1.2, 1.15, 1.0, 0.75, 0.45]  # fmt: skip
HOUR_SHARE = [w / sum(HOUR_SHAPE) for w in HOUR_SHAPE]
# Custom events: name, page-path prefix it is sent from ("" any), chance per page view there, properties
# (values most frequent first). Engagement reports follow 65 % of page views (the tracker sends none under 1 s).
CUSTOM_EVENTS = (
    ("signup", "/signup", 0.3, {"plan": ("free", "pro", "team")}),
    ("download", "/docs", 0.08, {"file": tuple(f"footfall-1.{i}.tar.gz" for i in range(12, 0, -1))}),
    ("outbound", "", 0.03, {"url": tuple(f"https://partner-{i}.example/" for i in range(40))}),
    ("play_video", "/blog", 0.05, {"video": tuple(f"intro-{i}" for i in range(8)), "autoplay": (False, True)}),
    ("search", "/docs", 0.1, {"results": ("1-10", "10+", "0")}),
    ("newsletter", "/blog", 0.02, {"source": ("footer", "popup")}),
)  # fmt: skip
ENGAGED_SHARE = 0.65
# Goals and one funnel defined for the site through footfall.models: name, kind, path, event, prop, value.
GOAL_DEFS = (("Pricing", PAGE, "/pricing", "", "", ""), ("Signup page", PAGE, "/signup", "", "", ""),
             ("Signup", EVENT, "", "signup", "", ""), ("Pro signup", EVENT, "", "signup", "plan", "pro"),
             ("Docs", PAGE, "/docs*", "", "", ""), ("Download", EVENT, "", "download", "", ""))  # fmt: skip
FUNNEL_DEF = ("Trial", (0, 1, 2))  # steps: indexes into GOAL_DEFS
# Alert rules made through alerts.models with --alert-checks (a team's set: every kind, spikes of each scope, a
# rule per goal): name, kind, threshold, window minutes, scope, value, goal name (a GOAL_DEFS name or "").
ALERT_RULE_DEFS = (
    ("Site spike 15m", "spike", 3.0, 15, "", "", ""), ("Site spike 1h", "spike", 3.0, 60, "", "", ""),
    ("Any page spike", "spike", 3.0, 15, "page", "", ""), ("Pricing spike", "spike", 3.0, 15, "page", "/pricing", ""),
    ("Signup page spike", "spike", 4.0, 30, "page", "/signup", ""),
    ("Any referrer spike", "spike", 3.0, 15, "ref", "", ""),
    ("HN spike", "spike", 3.0, 15, "ref", "news.ycombinator.com", ""),
    ("Drop 30m", "drop", 0.5, 30, "", "", ""), ("Drop 2h", "drop", 0.5, 120, "", "", ""),
    ("Deep drop 15m", "drop", 0.2, 15, "", "", ""),
    *((f"{name} low", "goal", 1.0, 60, "", "", name) for name, *_ in GOAL_DEFS),
    ("Realtime lag", "realtime_lag", 300.0, 60, "", "", ""),
    ("Archiver lag", "archiver_lag", 100_000.0, 60, "", "", ""),
    ("Rollup late", "rollup", 6.0, 60, "", "", ""), ("Drift", "drift", 5.0, 60, "", "", ""),
)  # fmt: skip


@dataclass(frozen=True)
class Definitions:
    """The site's goals and funnel as the models made them (their ids)."""

    goals: tuple[GoalSpec, ...]
    funnel: FunnelSpec


def _engaged_s(path: str) -> float:
    """Mean engaged seconds of a report on ``path``: posts are read, the rest glanced at."""
    return 55.0 if path.startswith(("/blog", "/docs", "/guides")) else 22.0


def _times_ms(rng: random.Random, n: int, median_s: float) -> tuple[float | None, list[int]]:
    """``n`` step-to-step times around ``median_s``: their exact median and their histogram
    (counts per bucket of FUNNEL_TIME_BOUNDS_MS), as the funnel documents hold them."""
    times = sorted(rng.lognormvariate(math.log(median_s * 1000), 1.0) for _ in range(n))
    counts = [0] * (len(FUNNEL_TIME_BOUNDS_MS) + 1)
    for t in times:
        counts[bisect.bisect_right(FUNNEL_TIME_BOUNDS_MS, t)] += 1
    return (round(statistics.median(times), 3) if times else None), counts


def day_documents(site: str, day: dt.date, defs: Definitions) -> DayDocuments:
    """One settled day, shaped like the Spark rollup's output (``spark_jobs/rollup.py``)."""
    rng, tz = random.Random(f"{SEED}:{site}:{day}"), ZoneInfo(TZ)
    pv_total = int(DAILY_PAGEVIEWS * (0.72 if day.weekday() >= 5 else 1.0) * rng.uniform(0.85, 1.15))
    visitors = int(pv_total / rng.uniform(2.4, 2.9))
    sessions = int(visitors * rng.uniform(1.1, 1.25))
    bounces = int(sessions * rng.uniform(0.45, 0.6))
    bots, custom = int(pv_total * rng.uniform(0.05, 0.1)), int(pv_total * rng.uniform(0.02, 0.05))
    daily = {"pageviews": pv_total, "visitors": visitors, "sessions": sessions, "bounces": bounces,
             "bounce_rate": round(bounces / sessions, 6), "visit_duration_s": round(rng.uniform(70, 130), 3),
             "events": pv_total + custom, "bot_events": bots, "custom_events": custom, "engaged_ms": 0,
             "engagements": 0}  # fmt: skip

    def part(total: int, share: float) -> int:
        return round(total * share * rng.uniform(0.8, 1.2))

    # One document per bucket of the local day (25 or 23 on a clock change), shaped by its local hour.
    hourly = [
        {**hour_document(day.isoformat(), TZ, b.start_ms), "pageviews": part(pv_total, s), "visitors":
         part(visitors, s * 1.6), "sessions": part(sessions, s), "events": part(pv_total + custom, s),
         "bot_events": part(bots, 1 / 24)}
        for b in day_buckets(day, tz) for s in [HOUR_SHARE[b.local_start(tz).hour]]
    ]  # fmt: skip
    rows: list[dict[str, object]] = []

    def add(dim: str, value: str, pv: int, **extra: object) -> None:
        if pv > 0:
            rows.append({"dimension": dim, "value": value, "pageviews": pv, "visitors": max(1, int(pv / rng.uniform(
                1.2, 1.9))), "sessions": None, "bounces": None, "visit_duration_s": None, "ref": None, "page": None}
                | extra)  # fmt: skip

    def engaged(pv: int, path: str) -> dict[str, int]:
        reports = int(pv * ENGAGED_SHARE * rng.uniform(0.9, 1.1))
        daily["engagements"] += reports
        daily["engaged_ms"] += (engaged_ms := int(reports * _engaged_s(path) * 1000 * rng.uniform(0.8, 1.2)))
        return {"engaged_ms": engaged_ms, "engagements": reports}

    page_pv = {path: part(pv_total, share) for path, share in zip(PAGES, PAGE_SHARE, strict=True)}
    for path, pv in page_pv.items():
        scroll_views = int(pv * ENGAGED_SHARE * rng.uniform(0.85, 0.95))
        scroll = {"scroll_views": scroll_views, "scroll_sum": int(scroll_views * rng.uniform(35, 80))}
        add("page", path, pv, **engaged(pv, path), **scroll)
    engaged_share = {k: v for k, v in daily.items() if k in ("engaged_ms", "engagements")}
    for (ref, _), share in zip(REFS, REF_SHARE, strict=True):
        ref_pv = part(pv_total, share)
        add("ref", ref, ref_pv, **{k: int(v * ref_pv / pv_total) for k, v in engaged_share.items()})
        for path, page_share in zip(PAGES, PAGE_SHARE, strict=True):  # where the referrer's visitors land
            if (pair_pv := part(ref_pv, page_share)) >= PAIR_MIN:
                add("refpage", f"{ref}{REFPAGE_SEPARATOR}{path}", pair_pv, ref=ref, page=path)
    for dim, n in OTHER_DIMENSIONS.items():
        for i, share in enumerate(zipf(n, 1.0)):
            add(dim, f"{dim}-{i}", part(pv_total, share))
    # Custom events, their properties and goals as spark_jobs.conversions writes them: page views 0.
    goals: dict[str, list[int]] = {g.goal_id: [0, 0] for g in defs.goals}

    def conversions(events: int, visitors: int, type_: str, path: str | None, props: dict | None) -> None:
        for g in defs.goals:  # a property goal counts from its value's row, any other from the event's
            if bool(g.prop) == (props is not None) and g.matches(type_, path, props):
                goals[g.goal_id][0] += events
                goals[g.goal_id][1] += visitors

    for path, pv in page_pv.items():
        conversions(pv, int(pv / rng.uniform(1.2, 1.9)), "pageview", path, None)
    custom_total = 0
    for name, where, chance, props in CUSTOM_EVENTS:
        sent_from = sum(pv for path, pv in page_pv.items() if path.startswith(where))
        events = int(sent_from * chance * rng.uniform(0.8, 1.2))
        visitors = int(events / rng.uniform(1.1, 1.6))
        if events <= 0:
            continue
        custom_total += events
        rows.append({"dimension": "event", "value": name, "pageviews": 0, "visitors": visitors, "events": events})
        conversions(events, visitors, name, None, None)
        for prop, values in props.items():
            for value, share in zip(values, zipf(len(values), 1.2), strict=True):
                text = str(value).lower() if isinstance(value, bool) else str(value)
                n = int(events * share * rng.uniform(0.9, 1.1))
                if n > 0:
                    v = max(1, int(n / rng.uniform(1.1, 1.6)))
                    rows.append({"dimension": "event_prop", "value": PROP_SEPARATOR.join((name, prop, text)),
                                 "pageviews": 0, "visitors": v, "events": n, "event": name, "prop": prop,
                                 "prop_value": text})  # fmt: skip
                    conversions(n, v, name, None, {prop: text})
    daily |= {"custom_events": custom_total, "events": pv_total + custom_total}
    for g in defs.goals:  # every goal every day, zeros included, as the rollup writes them
        events, visitors = goals[g.goal_id]
        rows.append({"dimension": "goal", "value": g.goal_id, "pageviews": 0, "visitors": int(visitors * 0.9),
                     "events": events, "name": g.name})  # fmt: skip
    # Where goals' converting visitors came from (spark_jobs.conversions.goal_source_breakdowns): every visitor
    # attributed to one value per dimension, each goal's converters spread over the values alike.
    for dim in GOAL_SOURCE_DIMENSIONS:
        values = [ref for ref, _ in REFS] if dim == "ref" else PAGES if dim == "entry_page" else [
            f"{dim}-{i}" for i in range(OTHER_DIMENSIONS[dim])]  # fmt: skip
        shares = REF_SHARE if dim == "ref" else PAGE_SHARE if dim == "entry_page" else zipf(len(values), 1.0)
        for value, share in zip(values, shares, strict=True):
            if (base := part(visitors, share)) > 0:
                rows.append({"dimension": GOAL_BASE_PREFIX + dim, "value": value, "pageviews": 0, "visitors": base})
            for g in defs.goals:
                converting = min(base, part(goals[g.goal_id][1], share))
                if converting > 0:
                    rows.append({"dimension": GOAL_SOURCE_PREFIX + dim, "value": g.goal_id + PROP_SEPARATOR + value,
                                 "pageviews": 0, "visitors": converting, "goal_id": g.goal_id,
                                 "events": int(converting * rng.uniform(1.0, 1.4))})  # fmt: skip
    # The funnel's attempts started this day: each step a share of the one before.
    reached, steps = goals[defs.funnel.steps[0].goal_id][1] // 3, []
    for index in range(len(defs.funnel.steps)):
        if index == 0:
            steps.append({"visitors": reached, "median_ms": None, "times_ms": [0] * (len(FUNNEL_TIME_BOUNDS_MS) + 1)})
            continue
        reached = int(reached * rng.uniform(0.15, 0.45))
        median_ms, times_ms = _times_ms(rng, reached, 40.0 * index)
        steps.append({"visitors": reached, "median_ms": median_ms, "times_ms": times_ms})
    funnels = [{"funnel_id": defs.funnel.funnel_id, "name": defs.funnel.name, "steps": steps}]
    run = {"status": "complete", "events_read": pv_total + custom_total + bots, "pageviews": pv_total, "tz": TZ,
           "computed_at": dt.datetime.now(dt.UTC), "spark_master": "api_bench (synthetic)",
           "goal_ids": [g.goal_id for g in defs.goals], "goal_sources": GOAL_SOURCES}  # fmt: skip
    return DayDocuments(site, day.isoformat(), daily, hourly, rows, run, funnels)


def realtime_events(site: str, start_ms: int, end_ms: int, n: int) -> Iterator[Event]:
    """``n`` page views over ``[start_ms, end_ms)``, shaped by the local hour, each followed by what its
    visitor sent from the page (:func:`follow_ups`); in time order within each minute."""
    rng = random.Random(f"{SEED}:{site}:realtime")
    demo = DemoTraffic(site_id=site, host="bench.example", visitors=max(1000, n // 5), seed=SEED)
    minutes = range(start_ms // 60_000 + 1, end_ms // 60_000)
    weights = [HOUR_SHAPE[dt.datetime.fromtimestamp(m * 60, ZoneInfo(TZ)).hour] for m in minutes]
    scale = n / sum(weights)
    for minute, weight in zip(minutes, weights, strict=True):
        count = int(weight * scale) + (rng.random() < weight * scale % 1)
        picks = zip(rng.choices(range(60_000), k=count), rng.choices(PAGES, PAGE_SHARE, k=count),
                    rng.choices(REFS, REF_SHARE, k=count), strict=True)  # fmt: skip
        batch = []
        for offset, path, (ref, kind) in sorted(picks):
            direct, utm = ref == "(direct)", None
            if kind in {"social", "email"} and rng.random() < 0.4:
                utm = Utm(source=f"source-{rng.randrange(12)}", medium=kind, campaign=f"campaign-{rng.randrange(25)}")
            view = msgspec.structs.replace(
                demo.event(minute * 60_000 + offset), url=f"https://bench.example{path}", path=path, title=path,
                referrer=None if direct else f"https://{ref}/", ref_domain=None if direct else ref, ref_type=kind,
                utm=utm,
            )  # fmt: skip
            batch += [view, *follow_ups(rng, view, end_ms)]
        yield from sorted(batch, key=lambda e: e.ts)


def follow_ups(rng: random.Random, view: Event, end_ms: int) -> list[Event]:
    """What a page view's visitor sends from the page: the custom events of the page
    (CUSTOM_EVENTS) and, for most views, one engagement report with engaged time and scroll depth."""
    path, out = view.path or "/", []

    def later(seconds: float) -> int:
        return min(end_ms - 1, view.ts + int(seconds * 1000))

    for name, where, chance, props in CUSTOM_EVENTS:
        if path.startswith(where) and rng.random() < chance:
            values = {prop: rng.choices(vals, zipf(len(vals), 1.2))[0] for prop, vals in props.items()}
            out.append(msgspec.structs.replace(view, event_id=new_event_id(), type=name, ts=(ts := later(
                rng.expovariate(1 / 20))), received_at=ts, props=values))  # fmt: skip
    if rng.random() < ENGAGED_SHARE:
        engaged_ms = min(MAX_ENGAGED_MS, max(1000, int(rng.expovariate(1 / _engaged_s(path)) * 1000)))
        props = {ENGAGED_MS_PROP: engaged_ms, SCROLL_DEPTH_PROP: rng.choice(range(10, 101, 10)),
                 PAGEVIEW_ID_PROP: view.event_id}  # fmt: skip
        ts = later(engaged_ms / 1000 + 1)  # sent when the page is left
        out.append(msgspec.structs.replace(view, event_id=new_event_id(), type=ENGAGEMENT, ts=ts, received_at=ts,
                                           props=props))  # fmt: skip
    return out


def seed(db: Any, store: CounterStore, site: str, days: list[dt.date], events: int, retention_s: int,
         defs: Definitions) -> dict:  # fmt: skip
    """The site's settled days in Mongo and recent page views (with what follows them) in Redis."""
    print(f"seeding site {site}: {len(days)} settled days up to {days[-1]}, ~{events:,} page views in Redis")
    t, docs = time.monotonic(), 0
    for day in days:
        docs += load_day(db, day_documents(site, day, defs))["written"]
    seeding = {"site": site, "mongo_documents": docs, "mongo_s": round(time.monotonic() - t, 1)}
    t, end_ms, counted, kinds = time.monotonic(), int(time.time() * 1000), 0, Counter[str]()
    stream = realtime_events(site, end_ms - (retention_s - 120) * 1000, end_ms, events)
    while chunk := list(itertools.islice(stream, 5000)):
        counted += store.apply(chunk, int(time.time() * 1000)).counted
        kinds.update("pageview" if e.type == "pageview" else ENGAGEMENT if e.type == ENGAGEMENT else "custom"
                     for e in chunk)  # fmt: skip
    seeding |= {"redis_events": counted, "redis_kinds": dict(kinds), "redis_s": round(time.monotonic() - t, 1)}
    # What the realtime worker does a few minutes after each hour ends (realtime.keys, Value hours).
    t, now_ms = time.monotonic(), int(time.time() * 1000)
    merged = HourMerger(store).merge(site, closed_hours(end_ms - retention_s * 1000, now_ms))
    seeding |= {"merged_hours": merged, "merge_s": round(time.monotonic() - t, 1)}
    print(f"  seeded: {seeding}", flush=True)
    return seeding
