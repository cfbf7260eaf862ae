"""Journeys computed in plain Python straight from events, written from docs/reports.md ("Journeys"),
not from the Spark job or the stored sequences: the truth the rollup, the API and the dashboard
are checked against."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from zoneinfo import ZoneInfo

GAP_MS = 30 * 60_000


@dataclass(frozen=True, slots=True)
class Hit:
    """What a journey needs of one (deduplicated) event."""

    visitor: str | None
    ts: int
    event_id: str
    type: str
    path: str | None = None
    bot: bool = False


def label(hit: Hit) -> str | None:
    if hit.bot or hit.visitor is None or hit.type in ("request", "engagement"):
        return None
    if hit.type == "pageview":
        return hit.path if hit.path and hit.path.startswith("/") else None
    return None if hit.type.startswith("/") else hit.type


def sessions(hits: Iterable[Hit], tz: str) -> dict[str, list[tuple[str, list[str]]]]:
    """Per local day: (visitor, steps) of each session starting that day, reloads collapsed."""
    by_visitor: dict[str, list[Hit]] = defaultdict(list)
    for hit in hits:
        if label(hit) is not None:
            by_visitor[str(hit.visitor)].append(hit)
    out: dict[str, list[tuple[str, list[str]]]] = defaultdict(list)
    for visitor, own in by_visitor.items():
        own.sort(key=lambda h: (h.ts, h.event_id))
        runs: list[list[Hit]] = []
        for hit in own:
            if runs and hit.ts - runs[-1][-1].ts <= GAP_MS:
                runs[-1].append(hit)
            else:
                runs.append([hit])
        for run in runs:
            steps: list[str] = []
            for hit in run:
                if not steps or steps[-1] != label(hit):
                    steps.append(str(label(hit)))
            day = dt.datetime.fromtimestamp(run[0].ts / 1000, ZoneInfo(tz)).date().isoformat()
            out[day].append((visitor, steps))
    return out


def journey(
    hits: Iterable[Hit], tz: str, days: Iterable[str], start: str, path: Sequence[str], direction: str = "next"
) -> dict[str, object]:
    """``{"visitors": v, "columns": [{label: visitors}, …]}``: the visitors reaching ``start`` and, per
    step 1 to len(path) + 1, the labels taken there by those who took the path's steps before it;
    visitors distinct per day and summed over ``days``."""
    per_day = sessions(hits, tz)
    total = 0
    columns: list[dict[str, int]] = [defaultdict(int) for _ in range(len(path) + 1)]
    for day in days:
        started: set[str] = set()
        taken: list[dict[str, set[str]]] = [defaultdict(set) for _ in range(len(path) + 1)]
        for visitor, steps in per_day.get(day, []):
            if start not in steps:
                continue
            at = steps.index(start)
            if direction == "next":
                after, end = steps[at + 1 :], "(exit)"
            else:
                after, end = list(reversed(steps[:at])), "(entrance)"
            started.add(visitor)
            for n in range(len(path) + 1):
                took = after[n] if n < len(after) else end
                taken[n][took].add(visitor)
                if n == len(path) or took != path[n]:
                    break
        total += len(started)
        for n, column in enumerate(taken):
            for name, visitors in column.items():
                columns[n][name] += len(visitors)
    return {"visitors": total, "columns": [dict(c) for c in columns]}
