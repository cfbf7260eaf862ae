"""Conversions and custom events from both stores: goals, where their converting visitors came
from, one goal per day, funnels, and the properties of custom events. Each answer plans its
range as :class:`query.service.QueryService` does (settled days from the rollups, recent time
from the speed layer) and says in ``sources`` what came from where; what each figure means is
in ``docs/reports.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from zoneinfo import ZoneInfo

from footfall.goals import FunnelSpec, GoalSpec
from footfall.revenue import RevenueSums, decimal_text, ratio_text
from footfall.vocabulary import EVENT_PROP_VALUES, GOAL_BREAKDOWN_METRICS, PROP_SEPARATOR, VALUE_OTHER
from query.params import Range
from query.plan import Piece, ms, site_day
from query.service import (
    REALTIME_TOP,
    VISITORS_DAILY_SUM,
    VISITORS_EXACT,
    QueryService,
    QuerySite,
    batch_days,
    iso,
)
from query.stores import FunnelHistory, Sums


def revenue_answer(sums: RevenueSums, visitors: int | None) -> dict[str, object]:
    """A goal's revenue as answers show it: per currency (alphabetical) the ``total``, the
    ``conversions`` with revenue in it, the ``average`` per such conversion and the revenue
    ``per_visitor`` of ``visitors`` (null when unknown or 0); amounts as decimal text
    (:func:`footfall.revenue.decimal_text`). ``without_revenue``: conversions with no valid revenue."""
    currencies = [
        {"currency": currency, "total": decimal_text(units), "conversions": conversions,
         "average": ratio_text(units, conversions), "per_visitor": ratio_text(units, visitors or 0)}
        for currency, (conversions, units) in sorted(sums.currencies.items())
    ]  # fmt: skip
    return {"currencies": currencies, "without_revenue": sums.without}


class Conversions:
    """Goal, funnel and custom-event answers over one :class:`QueryService`'s stores."""

    def __init__(self, svc: QueryService) -> None:
        self.svc = svc

    # -- custom event properties -----------------------------------------------------------

    def event_properties(
        self, site: QuerySite, event: str, prop: str, rng: Range, limit: int, page: int
    ) -> dict[str, object]:
        """The values of property ``prop`` of custom event ``event``, ranked by events."""
        settled = self.svc.settlement(site, rng.start)
        pieces = self.svc.pieces(site, rng.start, rng.end, settled)
        days = batch_days(pieces)
        sid = site.site_id
        settled_sums = self.svc.settled_read(
            settled, ("event_prop", sid, event, prop), days,
            lambda: self.svc.rollups.event_properties(sid, event, prop, days),
        )  # fmt: skip
        merged = {value: sums.copy() for value, sums in settled_sums.items()}
        notes = [
            f"each settled day keeps the {EVENT_PROP_VALUES} values with most events per property and counts "
            f"the rest as {VALUE_OTHER}"
        ]
        if any(p.source == "realtime" for p in pieces):
            realtime = [p for p in pieces if p.source == "realtime"]
            self._add_realtime_properties(sid, event, prop, realtime, merged)
            unattributed = sum(self.svc.rt.other_count(sid, "event_prop", ms(p.start), ms(p.end)) for p in realtime)
            if unattributed:
                notes.append(
                    f"realtime part: {unattributed:,} property values of custom events came past the speed layer's "
                    "cap (values per minute over all events and properties); they belong to no event and are "
                    "not in these rows until the day settles"
                )
        if any(p.source == "missing" for p in pieces):
            notes.append("part of the range is older than the realtime window and not rolled up yet: not counted")
        notes.append(self.svc.visitor_note(pieces, rng))
        notes += self.svc.imported_absent(site, rng, settled, "custom event properties")
        ranked = sorted(merged.items(), key=lambda kv: (-kv[1].events, kv[0]))
        chosen = ranked[(page - 1) * limit : page * limit]
        return {
            "site_id": sid,
            "event": event,
            "property": prop,
            "from": iso(rng.start),
            "to": iso(rng.end),
            "tz": rng.tz.key,
            "results": [{"value": v, "events": s.events, "visitors": s.visitors} for v, s in chosen],
            "page": page,
            "limit": limit,
            "total": len(ranked),
            "sources": self.svc.sources(pieces, settled, notes),
        }

    def _add_realtime_properties(
        self, site_id: str, event: str, prop: str, pieces: list[Piece], merged: dict[str, Sums]
    ) -> None:
        for p in pieces:
            # Values past the top are summed as (other), as each settled day counts its rest: the rows add up.
            rows = self.svc.rt.event_properties(
                site_id, event, prop, ms(p.start), ms(p.end), REALTIME_TOP, rest_as_other=True
            )
            for row in rows:
                sums = merged.setdefault(row.value, Sums())
                sums.events += row.events
                sums.visitors += row.visitors

    # -- goals ---------------------------------------------------------------------------

    def goals(self, site: QuerySite, rng: Range, goals: Sequence[GoalSpec]) -> dict[str, object]:
        """Conversions of each goal over the range: total, unique (visitors) and the rate,
        unique conversions / visitors of the same range.

        Settled days answer from the rollup, which counts the goals defined when the day was
        rolled up; a goal created later has no figures for such days until they are rolled up
        again, and the answer says which days those are. The realtime part is counted from
        the speed layer's page and event counters when read, so it covers any goal."""
        settled = self.svc.settlement(site, rng.start)
        pieces = self.svc.pieces(site, rng.start, rng.end, settled)
        days = batch_days(pieces)
        sid = site.site_id
        batch = self.svc.settled_read(settled, ("goals", sid), days, lambda: self.svc.rollups.goal_counts(sid, days))
        counts = {g.goal_id: list(batch.get(g.goal_id, (0, 0))) for g in goals}
        paid = [g for g in goals if g.has_revenue]
        revenue = {g.goal_id: RevenueSums() for g in paid}
        if paid:
            for goal_id, sums in self.svc.settled_read(
                settled, ("goal_revenue", sid), days, lambda: self.svc.rollups.goal_revenue(sid, days)
            ).items():
                if goal_id in revenue:
                    revenue[goal_id].merge(sums)
        for p in pieces:
            if p.source == "realtime" and goals:
                got_counts = self.svc.rt.goal_counts(sid, goals, ms(p.start), ms(p.end))
                for goal_id, got in got_counts.items():
                    counts[goal_id][0] += got.conversions
                    counts[goal_id][1] += got.visitors
                recent = self.svc.rt.goal_revenue(sid, paid, ms(p.start), ms(p.end)) if paid else {}
                for goal_id, sums in recent.items():
                    # The speed layer sums valid amounts only: the piece's other conversions had none.
                    sums.without = max(got_counts[goal_id].conversions - sums.paid, 0)
                    revenue[goal_id].merge(sums)
        total = self.svc.totals(site, pieces, self.svc.daily(site, settled, days))["visitors"]
        notes = [self.svc.visitor_note(pieces, rng), *self.svc.imported_absent(site, rng, settled, "goals")]
        for g in paid:
            counted = {d for d in days if g.goal_id in settled.goals.get(d, frozenset())}
            before = sorted(d for d in counted if g.goal_id not in settled.revenue_goals.get(d, frozenset()))
            if before:
                notes.append(
                    f"goal {g.goal_id} ({g.name}): {len(before)} settled day(s) from {before[0]} to {before[-1]} were "
                    "rolled up before the goal counted revenue and count none; roll them up again to count it"
                )
        for g in goals:
            before = sorted(d for d in days if g.goal_id not in settled.goals.get(d, frozenset()))
            if before:
                notes.append(
                    f"goal {g.goal_id} ({g.name}): {len(before)} settled day(s) from {before[0]} to {before[-1]} "
                    "were rolled up before the goal existed and count nothing for it; roll them up again to count it"
                )
        if any(p.source == "missing" for p in pieces):
            notes.append("part of the range is older than the realtime window and not rolled up yet: not counted")
        known = any(p.source != "missing" for p in pieces)
        results = []
        for g in goals:
            events, visitors = counts[g.goal_id]
            rate = round(visitors / total, 6) if isinstance(total, int) and total else None
            money = (
                revenue_answer(revenue[g.goal_id], total if isinstance(total, int) else None) if g.has_revenue else None
            )
            results.append({**g.to_json(), "events": events if known else None,
                            "visitors": visitors if known else None, "conversion_rate": rate,
                            "revenue": money if known else None})  # fmt: skip
        return {
            "site_id": sid,
            "from": iso(rng.start),
            "to": iso(rng.end),
            "tz": rng.tz.key,
            "visitors": total,
            "results": results,
            "sources": self.svc.sources(pieces, settled, notes),
        }

    # -- where a goal's converting visitors came from ----------------------------------------

    def goal_breakdown(
        self, site: QuerySite, dim: str, spec: GoalSpec, rng: Range, limit: int, page: int
    ) -> dict[str, object]:
        """The values of goal source dimension ``dim`` (GOAL_SOURCE_DIMENSIONS) that goal ``spec``'s
        converting visitors came from, ranked by converting visitors: per value ``visitors``
        (converting visitors, each visitor-day under its first session of the day),
        ``conversions`` (their conversions) and ``conversion_rate`` (converting / all visitors
        attributed to the value the same way).

        Only the nightly rollup attributes visitors (docs/reports.md): the part of the range it
        has not settled is reported as missing, never estimated from the speed layer's counters,
        and settled days rolled up before the goal (or before attribution) are named in the notes."""
        settled = self.svc.settlement(site, rng.start)
        pieces = self.svc.pieces(site, rng.start, rng.end, settled)
        sid, goal_id = site.site_id, spec.goal_id
        days = batch_days(pieces)
        counted = {d for d in days if d in settled.goal_sources and goal_id in settled.goals.get(d, frozenset())}
        found = self.svc.settled_read(
            settled, ("goal_sources", sid, dim, goal_id), counted,
            lambda: self.svc.rollups.goal_sources(sid, dim, goal_id, counted),
        )  # fmt: skip
        ranked = sorted(found.items(), key=lambda kv: (-kv[1][0], -kv[1][1], kv[0]))
        chosen = ranked[(page - 1) * limit : page * limit]
        shown = sorted(value for value, _ in chosen)
        base = self.svc.settled_read(
            settled, ("goal_base", sid, dim, PROP_SEPARATOR.join(shown)), counted,
            lambda: self.svc.rollups.goal_base(sid, dim, counted, shown),
        )  # fmt: skip
        revenue = (
            self.svc.settled_read(
                settled, ("goal_source_revenue", sid, dim, goal_id, PROP_SEPARATOR.join(shown)), counted,
                lambda: self.svc.rollups.goal_source_revenue(sid, dim, goal_id, counted, shown),
            )
            if spec.has_revenue
            else {}
        )  # fmt: skip
        results = []
        for value, (visitors, conversions) in chosen:
            total = base.get(value, 0)
            rate = round(visitors / total, 6) if total else None
            row: dict[str, object] = {"value": value, "visitors": visitors, "conversions": conversions,
                                      "conversion_rate": rate}  # fmt: skip
            if spec.has_revenue:
                # Per visitor: over every visitor attributed to the value, as the rate's denominator.
                money = revenue_answer(revenue.get(value, RevenueSums()), total)
                row["revenue"] = money["currencies"]
            results.append(row)
        # The speed layer counts minutes, not visitors' first sessions: its part is not answered.
        reported = [replace(p, source="missing") if p.source == "realtime" else p for p in pieces]
        notes = [
            "visitors: each visitor-day counts under its first session of the day, exact per settled day; "
            "a range sums the days (ids rotate daily, so a visitor converting on two days counts twice, and "
            "so does a visitor under the rate)"
        ]
        if any(p.source != "batch" for p in pieces):
            notes.append(
                "goal-filtered breakdowns are counted by the nightly rollup only: the part of the range not "
                "settled yet (today, the realtime window, and days not rolled up) is missing, not counted"
            )
        before = sorted(days - counted)
        if before:
            notes.append(
                f"goal {goal_id} ({spec.name}): {len(before)} settled day(s) from {before[0]} to {before[-1]} were "
                "rolled up before the goal, or before conversions were attributed to sources, and count nothing "
                "for it; roll them up again to count it"
            )
        notes += self.svc.imported_absent(site, rng, settled, "goals")
        return {
            "site_id": sid,
            "from": iso(rng.start),
            "to": iso(rng.end),
            "tz": rng.tz.key,
            "goal": {"goal_id": goal_id, "name": spec.name},
            "metrics": list(GOAL_BREAKDOWN_METRICS),
            "results": results,
            "page": page,
            "limit": limit,
            "total": len(ranked),
            "sources": self.svc.sources(reported, settled, notes),
        }

    # -- funnels -------------------------------------------------------------------------

    def funnel(self, site: QuerySite, spec: FunnelSpec, rng: Range) -> dict[str, object]:
        """Funnel ``spec`` over the settled days of the range: visitors per step, conversion
        from the step before and from the first, median time from the step before.

        Only the nightly rollup counts funnels (docs/reports.md): days not settled are named
        in the notes, never estimated. Each day counts its own visitors (ids rotate daily),
        and a range sums the days; a range's median comes from the days' summed histograms
        unless one day alone had visitors at the step."""
        settled = self.svc.settlement(site, rng.start)
        pieces = self.svc.pieces(site, rng.start, rng.end, settled)
        days = batch_days(pieces)
        sid = site.site_id
        none = FunnelHistory(spec.funnel_id, spec.name, (), ())  # never rolled up: a cacheable nothing
        found = self.svc.settled_read(
            settled, ("funnel", sid, spec.funnel_id), days,
            lambda: self.svc.rollups.funnel(sid, spec.funnel_id, days) or none,
        )  # fmt: skip
        notes = [f"visitors: {VISITORS_DAILY_SUM if len(days) > 1 else VISITORS_EXACT}"]
        notes += self.svc.imported_absent(site, rng, settled, "funnels")
        unsettled = sorted({p.day for p in pieces if p.source != "batch" and p.day})
        if unsettled or any(p.source != "batch" and not p.day for p in pieces):
            notes.append("funnels are counted by the nightly rollup only: the part of the range not settled yet "
                         "(today, and days not rolled up) is not included")  # fmt: skip
        counted = set(found.days)
        if days - counted:
            notes.append(f"{len(days - counted)} settled day(s) were rolled up before this funnel existed: "
                         "roll them up again to count it")  # fmt: skip
        steps = []
        first = None
        for index, goal in enumerate(spec.steps):
            step = found.steps[index] if index < len(found.steps) else None
            visitors = step.visitors if step else 0
            first = visitors if index == 0 else first
            before = steps[-1]["visitors"] if steps else None
            steps.append({
                "goal_id": goal.goal_id, "name": goal.name, "visitors": visitors,
                "conversion_from_previous": round(visitors / before, 6) if index and before else None,
                "conversion_from_first": round(visitors / first, 6) if index and first else None,
                "median_ms_from_previous": step.median_ms if index and step else None,
                "median_estimated": bool(step and step.median_estimated),
            })  # fmt: skip
        return {
            "site_id": sid,
            "funnel_id": spec.funnel_id,
            "name": spec.name,
            "window_minutes": spec.window_minutes,
            "strict": spec.strict,
            "from": iso(rng.start),
            "to": iso(rng.end),
            "tz": rng.tz.key,
            "steps": steps,
            "sources": self.svc.sources(pieces, settled, notes),
        }

    # -- one goal per day, property names --------------------------------------------------

    def goal_series(self, site: QuerySite, rng: Range, spec: GoalSpec) -> list[dict[str, object]]:
        """Goal ``spec``'s conversions (``events``) and unique conversions (``visitors``) per
        site-local day of the range, oldest first, each with the layer that counted it
        (``source``: batch, realtime, or missing with both None).

        A day partly in the realtime window and partly older counts only its recent part and
        says ``realtime``; a settled day rolled up before the goal existed counts 0 (see
        :meth:`goals` for the note that says so)."""
        site_tz = ZoneInfo(site.tz)
        settled = self.svc.settlement(site, rng.start)
        pieces = self.svc.pieces(site, rng.start, rng.end, settled)
        days = batch_days(pieces)
        sid = site.site_id
        batch = self.svc.settled_read(
            settled,
            ("goal_days", sid, spec.goal_id),
            days,
            lambda: self.svc.rollups.goal_days(sid, spec.goal_id, days),
        )
        out: dict[str, dict[str, object]] = {}
        # Pieces never cross a site-local midnight (query.plan.split), so each is one day's.
        for p in pieces:
            day = p.day or site_day(p.start, site_tz).isoformat()
            row = out.setdefault(day, {"day": day, "events": None, "visitors": None, "source": "missing"})
            if p.source == "missing":
                continue
            if p.source == "batch":
                events, visitors = batch.get(day, (0, 0))
            else:
                got = self.svc.rt.goal_counts(sid, [spec], ms(p.start), ms(p.end))[spec.goal_id]
                events, visitors = got.conversions, got.visitors
            row["events"] = int(row["events"] or 0) + events  # type: ignore[call-overload]
            row["visitors"] = int(row["visitors"] or 0) + visitors  # type: ignore[call-overload]
            row["source"] = p.source
        return list(out.values())

    def event_property_names(self, site: QuerySite, event: str, rng: Range) -> dict[str, object]:
        """The property names custom event ``event`` carried over the settled days of the
        range, most events first (the speed layer keeps no list of names: a property first
        seen today appears once its day is rolled up)."""
        settled = self.svc.settlement(site, rng.start)
        pieces = self.svc.pieces(site, rng.start, rng.end, settled)
        days = batch_days(pieces)
        sid = site.site_id
        names = self.svc.settled_read(
            settled, ("event_prop_names", sid, event), days,
            lambda: self.svc.rollups.event_property_names(sid, event, days),
        )  # fmt: skip
        notes = self.svc.imported_absent(site, rng, settled, "custom event properties")
        if any(p.source != "batch" for p in pieces):
            notes.append("property names come from the settled days only; recent days add theirs once rolled up")
        ranked = sorted(names.items(), key=lambda kv: (-kv[1], kv[0]))
        return {
            "site_id": sid,
            "event": event,
            "results": [{"prop": name, "events": events} for name, events in ranked],
            "sources": self.svc.sources(pieces, settled, notes),
        }
