"""Journeys: from a start page or custom event, the steps taken next (or, backwards, before an end
point), column by column along a selected path, over the settled days of a range. What the figures
mean is in ``docs/reports.md`` ("Journeys").

Pure path computation (:func:`parse`, :func:`walk`) over the kept session steps the nightly rollup
stores per day (:mod:`historical.journeys`, read through :mod:`query.stores`), and the answer
(:class:`Journeys`), planned as :class:`query.service.QueryService` plans every answer. Only the
rollup builds sessions' steps: the speed layer keeps none, so the unsettled part of a range is
missing, never estimated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from footfall.journeys import DIRECTIONS, ENDS, ENTRANCE, EXIT, MAX_STEPS, MORE, STORED_STEPS_CAP, is_step_label
from footfall.vocabulary import QueryError
from query.params import Range
from query.service import QueryService, QuerySite, batch_days, iso
from query.stores import JourneyDays, JourneyRow

MAX_OPTIONS = 1000


@dataclass(frozen=True, slots=True)
class JourneyQuery:
    """A validated journey question: from (``next``) or to (``previous``) ``start``, along ``path``."""

    start: str
    path: tuple[str, ...] = ()
    direction: str = "next"


def parse(start: str | None, path: str | None, direction: str | None) -> JourneyQuery:
    """The API's ``start``, ``path`` (steps separated by commas) and ``direction``; raises
    :class:`QueryError` naming the parameter. A step is a page path or an event name; the ends
    (``(exit)``, ``(entrance)``, ``(more)``) end a journey and cannot be selected."""
    if not start or not is_step_label(start):
        raise QueryError("start", "must be a page path (/…) or a custom event name")
    steps = tuple(path.split(",")) if path else ()
    if len(steps) >= MAX_STEPS:
        raise QueryError("path", f"may select at most {MAX_STEPS - 1} steps")
    for step in steps:
        if step in ENDS:
            raise QueryError("path", f"{step} ends a journey: nothing follows it")
        if not is_step_label(step):
            raise QueryError("path", "must be steps separated by commas, each a page path (/…) or an event name")
    chosen = direction or "next"
    if chosen not in DIRECTIONS:
        raise QueryError("direction", f"must be one of {', '.join(DIRECTIONS)}")
    return JourneyQuery(start, steps, chosen)


@dataclass(slots=True)
class Tally:
    """Distinct visitors (per day, summed over days) and sessions of one label of a column."""

    visitors: int = 0
    sessions: int = 0


@dataclass(slots=True)
class Walk:
    """What :func:`walk` found: the visitors and sessions at the start, and per column (step 1 to
    len(path) + 1) the labels taken there by those who took the selected steps before it."""

    visitors: int = 0
    sessions: int = 0
    columns: list[dict[str, Tally]] = field(default_factory=list)


def _day(rows: Sequence[JourneyRow], q: JourneyQuery, depth: int) -> tuple[set[int], int, list[dict[str, list]]]:
    started: set[int] = set()
    sessions = 0
    columns: list[dict[str, list]] = [{} for _ in range(depth)]
    for row in rows:
        try:
            at = row.steps.index(q.start)  # its first occurrence in the session
        except ValueError:
            continue
        if q.direction == "next":
            # A cut session's steps past what was kept are unknown: never claim it exited there.
            after, end = row.steps[at + 1 :], (MORE if row.truncated else EXIT)
        else:
            after, end = row.steps[:at][::-1], ENTRANCE  # the kept steps are a prefix: all of them
        started.add(row.visitor)
        sessions += row.sessions
        for n in range(depth):
            took = after[n] if n < len(after) else end
            tally = columns[n].setdefault(took, [set(), 0])
            tally[0].add(row.visitor)
            tally[1] += row.sessions
            if n == len(q.path) or took != q.path[n]:
                break
    return started, sessions, columns


def walk(days: Mapping[str, Sequence[JourneyRow]], q: JourneyQuery) -> Walk:
    """Journey ``q`` over each day's kept session steps. Per day, a visitor counts once per label of
    a column however many of their sessions took it; the days' counts are summed (visitor numbers
    are per day)."""
    depth = min(len(q.path) + 1, MAX_STEPS)
    out = Walk(columns=[{} for _ in range(depth)])
    for rows in days.values():
        started, sessions, columns = _day(rows, q, depth)
        out.visitors += len(started)
        out.sessions += sessions
        for n, column in enumerate(columns):
            for label, (visitors, count) in column.items():
                tally = out.columns[n].setdefault(label, Tally())
                tally.visitors += len(visitors)
                tally.sessions += count
    return out


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 6) if whole else None


def _option(label: str, tally: Tally, start: int) -> dict[str, object]:
    share = _share(tally.visitors, start)
    return {"label": label, "visitors": tally.visitors, "sessions": tally.sessions, "share": share}


def steps(found: Walk, q: JourneyQuery, limit: int) -> list[dict[str, object]]:
    """The answer's columns: per step its options (most visitors first, then sessions, then label; at
    most ``limit``), the selected one with the share of the start's visitors who reached it."""
    out = []
    for n, column in enumerate(found.columns):
        ranked = sorted(column.items(), key=lambda kv: (-kv[1].visitors, -kv[1].sessions, kv[0]))
        selected = q.path[n] if n < len(q.path) else None
        reached = column.get(selected, Tally()).visitors if selected is not None else None
        out.append({
            "step": n + 1,
            "selected": selected,
            "visitors": reached,
            "share": _share(reached, found.visitors) if reached is not None else None,
            "options": [_option(label, t, found.visitors) for label, t in ranked[:limit]],
            "total": len(ranked),
        })  # fmt: skip
    return out


class Journeys:
    """Journey answers over one :class:`QueryService`'s stores."""

    def __init__(self, svc: QueryService) -> None:
        self.svc = svc

    def journeys(self, site: QuerySite, rng: Range, q: JourneyQuery, limit: int = 20) -> dict[str, object]:
        """Journey ``q`` over the whole settled days of ``rng`` that were rolled up with journeys.

        Parts of days (a range cut mid-day), today and days not rolled up are reported as missing
        with a note, never estimated; settled days rolled up before journeys are named."""
        settled = self.svc.settlement(site, rng.start)
        pieces = self.svc.pieces(site, rng.start, rng.end, settled)
        whole = batch_days(pieces)  # whole days only (query.plan.split): the rollup keeps days' sessions
        sid = site.site_id
        found: JourneyDays = self.svc.settled_read(
            settled, ("journeys", sid), whole, lambda: self.svc.rollups.journeys(sid, whole)
        )
        result = walk(found.rows, q)
        # Imported history holds no sessions either: it is missing here too, and the notes say so.
        reported = [p if p.source == "batch" else replace(p, source="missing") for p in pieces]
        notes = [
            "visitors: exact distinct visitor ids per settled day, once per step taken however many sessions "
            "took it; a range sums the days (ids rotate daily, so a visitor returning on another day counts again)",
            f"a session's steps are kept up to {MAX_STEPS} past the last step it first reached within its "
            f"first {STORED_STEPS_CAP}; a session going on past that shows {MORE}",
        ]
        if any(p.source != "batch" for p in reported):
            notes.append(
                "journeys are counted by the nightly rollup only, per whole day: the part of the range not "
                "settled yet (today, the realtime window, days not rolled up and parts of days) is missing, not counted"
            )
        before = sorted(whole - set(found.rows))
        if before:
            notes.append(
                f"{len(before)} settled day(s) from {before[0]} to {before[-1]} were rolled up before journeys were "
                "kept and count nothing; roll them up again to count them"
            )
        notes += self.svc.imported_absent(site, rng, settled, "journeys")
        return {
            "site_id": sid,
            "start": q.start,
            "direction": q.direction,
            "path": list(q.path),
            "from": iso(rng.start),
            "to": iso(rng.end),
            "tz": rng.tz.key,
            "visitors": result.visitors,
            "sessions": result.sessions,
            "steps": steps(result, q, limit),
            "sources": self.svc.sources(reported, settled, notes),
        }
