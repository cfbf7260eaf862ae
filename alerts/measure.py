"""The figure each alert rule watches, read through the query layer (never from a store).

:class:`Measurer` reads one :class:`alerts.rules.Reading` per rule. Pipeline-wide figures
(realtime and archiver lag) are read once per check run, however many sites watch them.

How the figures are made:

* **spike**: the trend detector's z-score (:mod:`realtime.trends`, "Rising now"): page views of
  the last ``window_minutes`` against the same-length blocks of the hours before (at least 3
  blocks and 3 hours), of the whole site, of the strongest page or referrer, or of the one
  named. The details list the referrers and pages with most visitors in the window and the
  subject's visitors per 5 minutes over the last 6 hours.
* **drop**: visitors of the last ``window_minutes`` against the *usual* level: the mean of the
  same window at the same weekday and time in each of the previous 4 weeks, read as hourly
  series (settled hours from the rollups, recent ones from the speed layer), each hour's
  visitors counted in proportion to the part of it inside the window. The window now is read
  the same way, so both sides count alike. Weeks with nothing counted at all (before the site
  was installed, a gap older than the speed layer's retention that no rollup settled) are
  left out; with fewer than :data:`MIN_WEEKS` weeks left the rule is not judged.
* **goal**: the goal's conversions over the window (:class:`query.conversions.Conversions`).
* **realtime_lag**: the age of the oldest event the realtime workers have not counted
  (:meth:`query.health.PipelineHealth.realtime_lag_s`); **archiver_lag**: events the
  archiver has not archived.
* **rollup**: the site-local yesterday: hours since it ended while its rollup is not complete
  (0 once it is); a failed rollup of any of the last 3 days holds at once, whatever the hour.
* **drift**: the newest reconciled day's realtime-vs-batch drift, the larger of page views'
  and visitors', in percent.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from zoneinfo import ZoneInfo

from alerts.rules import (
    ARCHIVER_LAG,
    DRIFT,
    DROP,
    GOAL,
    REALTIME_LAG,
    ROLLUP,
    SPIKE,
    Reading,
    RuleSpec,
    series_points,
)
from footfall.goals import GoalSpec
from query.conversions import Conversions
from query.health import PipelineHealth
from query.params import Range
from query.plan import ms
from query.service import QueryService, QuerySite
from query.stores import Row

SPIKE_BASELINE_MINUTES = 180  # the trend detector's baseline ("Rising now" compares with 3 hours)
SPIKE_MIN_BLOCKS = 3
SERIES_STEP = dt.timedelta(minutes=5)
SERIES_SPAN = dt.timedelta(hours=6)
TOP_ROWS = 5
DROP_WEEKS = 4
MIN_WEEKS = 2
ROLLUP_DAYS = 3
WEEK = dt.timedelta(weeks=1)


def spike_baseline_minutes(window_minutes: int) -> int:
    """The baseline of a spike rule: whole windows covering at least 3 hours, at least 3."""
    blocks = max(SPIKE_MIN_BLOCKS, -(-SPIKE_BASELINE_MINUTES // window_minutes))
    return blocks * window_minutes


def _rows(rows: list[Row]) -> list[dict[str, Any]]:
    # A referrer's (other) row has no visitors of its own (RealtimeQueries.pairs): ranked by page views after the rest.
    ranked = sorted(rows, key=lambda r: (-(r.visitors or 0), -r.pageviews, r.value))
    return [{"value": r.value, "visitors": r.visitors} for r in ranked[:TOP_ROWS]]


@dataclass
class Measurer:
    """Reads rules' figures at ``now`` through one query service; one per check run."""

    svc: QueryService
    conversions: Conversions
    health: PipelineHealth
    now: dt.datetime
    _shared: dict[str, float] = field(default_factory=dict)

    def read(self, rule: RuleSpec, site: QuerySite, goal: GoalSpec | None = None) -> Reading:
        """The rule's figure now (raises what the stores raise when one is down)."""
        readers: dict[str, Callable[[], Reading]] = {
            SPIKE: lambda: self.spike(rule, site),
            DROP: lambda: self.drop(rule, site),
            GOAL: lambda: self.goal(rule, site, goal),
            REALTIME_LAG: lambda: Reading(self._pipeline(REALTIME_LAG)),
            ARCHIVER_LAG: lambda: Reading(self._pipeline(ARCHIVER_LAG)),
            ROLLUP: lambda: self.rollup(rule, site),
            DRIFT: lambda: self.drift(site),
        }
        if rule.kind not in readers:
            raise ValueError(f"unknown rule kind {rule.kind!r}")
        return readers[rule.kind]()

    # -- traffic -------------------------------------------------------------------------

    def spike(self, rule: RuleSpec, site: QuerySite) -> Reading:
        rt, now_ms = self.svc.rt, ms(self.now)
        window = rule.window_minutes
        dim = rule.scope or "page"
        trend = rt.trend(
            site.site_id, dim, now_ms, window, spike_baseline_minutes(window),
            value=rule.value or None, whole_site=not rule.scope,
        )  # fmt: skip
        if trend.active_blocks < SPIKE_MIN_BLOCKS:
            return Reading(
                None,
                f"too little history: {trend.active_blocks} of the {trend.blocks} baseline blocks of {window} min "
                f"had any page view (needs {SPIKE_MIN_BLOCKS})",
            )
        found = trend.rising
        z, subject = (found.z, found.value) if found else (0.0, rule.value or "")
        start_ms = (now_ms // 60_000 - window) * 60_000  # the block the detector calls recent
        end_ms = (now_ms // 60_000) * 60_000
        sid = site.site_id
        if not rule.scope or not subject:
            refs, pages = rt.top(sid, "ref", start_ms, end_ms), rt.top(sid, "page", start_ms, end_ms)
            filter_ = None
        else:  # the subject's own row, and the other dimension's values driving it
            (visitors,) = rt.visitors(sid, rule.scope, start_ms, end_ms, [subject])
            own = [Row(subject, found.recent if found else 0, visitors)]
            if rule.scope == "page":
                refs, pages = rt.page_referrers(sid, subject, start_ms, end_ms), own
            else:
                refs, pages = own, rt.referrer_pages(sid, subject, start_ms, end_ms)
            filter_ = (rule.scope, subject)
        return Reading(
            float(z),
            subject=(subject or "site") if rule.scope else "site",
            extra={
                "recent": found.recent if found else 0,
                "mean": found.baseline_mean if found else 0.0,
                "top_referrers": _rows(refs),
                "top_pages": _rows(pages),
                "series": self._series(site, filter_),
            },
        )

    def _series(self, site: QuerySite, filter_: tuple[str, str] | None) -> list[dict[str, Any]]:
        """Visitors per 5 minutes over the last 6 hours (each a HyperLogLog merge)."""
        end = self.now.replace(second=0, microsecond=0) + dt.timedelta(minutes=1)
        start = end - SERIES_SPAN
        spans = []
        cursor = start
        while cursor < end:
            spans.append((cursor, min(cursor + SERIES_STEP, end)))
            cursor += SERIES_STEP
        got = self.svc.rt.spans(site.site_id, "visitors", [(ms(a), ms(b)) for a, b in spans], filter_)
        return series_points([(a, float(v)) for (a, _), v in zip(spans, got, strict=True)])

    def window_visitors(self, site: QuerySite, start: dt.datetime, end: dt.datetime) -> float | None:
        """Visitors of ``[start, end)`` from the site's hourly series: each hour's visitors times
        the share of its elapsed part that lies inside the range. None when part of it is
        counted by neither layer."""
        got = self.svc.timeseries(site, "visitors", "hour", Range(start, end, ZoneInfo(site.tz)))
        total = 0.0
        points = got["points"]
        assert isinstance(points, list)
        for i, point in enumerate(points):
            b_start = dt.datetime.fromisoformat(point["t"])
            b_end = dt.datetime.fromisoformat(points[i + 1]["t"]) if i + 1 < len(points) else None
            if b_end is None:
                b_end = b_start + dt.timedelta(hours=1)
            elapsed_end = min(b_end, self.now)
            inside = min(b_end, end, elapsed_end) - max(b_start, start)
            elapsed = elapsed_end - b_start
            if inside <= dt.timedelta(0) or elapsed <= dt.timedelta(0):
                continue
            if point["value"] is None:
                return None
            total += point["value"] * (inside / elapsed)
        return total

    def drop(self, rule: RuleSpec, site: QuerySite) -> Reading:
        window = dt.timedelta(minutes=rule.window_minutes)
        end = self.now
        now_value = self.window_visitors(site, end - window, end)
        if now_value is None:
            return Reading(None, "the last window is counted by neither layer")
        weeks = []
        for k in range(1, DROP_WEEKS + 1):
            past = self.window_visitors(site, end - k * WEEK - window, end - k * WEEK)
            if past:  # None (not counted) and 0 (nothing counted) say nothing of the usual level
                weeks.append(past)
        if len(weeks) < MIN_WEEKS:
            return Reading(
                None,
                f"too little history: {len(weeks)} of the previous {DROP_WEEKS} weeks have visitors in this window "
                f"(needs {MIN_WEEKS})",
            )
        usual = sum(weeks) / len(weeks)
        return Reading(round(now_value, 3), usual=round(usual, 3), extra={"series": self._series(site, None)})

    def goal(self, rule: RuleSpec, site: QuerySite, goal: GoalSpec | None) -> Reading:
        if goal is None:
            return Reading(None, "the rule names no goal")
        rng = Range(self.now - dt.timedelta(minutes=rule.window_minutes), self.now, ZoneInfo(site.tz))
        got = self.conversions.goals(site, rng, [goal])
        results = got["results"]
        assert isinstance(results, list)
        events = results[0]["events"]
        if events is None:
            return Reading(None, "the window is counted by neither layer", subject=goal.name)
        return Reading(float(events), subject=goal.name)

    # -- the pipeline ----------------------------------------------------------------------

    def _pipeline(self, kind: str) -> float:
        """Realtime lag (s) or archiver lag (events), read once per run."""
        if kind not in self._shared:
            if kind == REALTIME_LAG:
                self._shared[kind] = round(self.health.realtime_lag_s(ms(self.now)), 1)
            else:
                self._shared[kind] = float(self.health.lag()["archiver_lag"])
        return self._shared[kind]

    def rollup(self, rule: RuleSpec, site: QuerySite) -> Reading:
        tz = ZoneInfo(site.tz)
        runs, _ = self.health.batch_days(site.site_id, ROLLUP_DAYS + 2)
        status = {str(r.get("day")): str(r.get("status", "")) for r in runs}
        today = self.now.astimezone(tz).date()
        ended = [today - dt.timedelta(days=n) for n in range(1, ROLLUP_DAYS + 1)]

        def end_of(day: dt.date) -> dt.datetime:
            return dt.datetime.combine(day + dt.timedelta(days=1), dt.time(), tz)

        def hours_since_end(day: dt.date) -> float:
            return round((self.now - end_of(day)).total_seconds() / 3600, 2)

        for day in ended:  # newest first
            if status.get(day.isoformat()) == "failed":
                return Reading(hours_since_end(day), forced=True, subject=day.isoformat())
        yesterday = ended[0]
        late = status.get(yesterday.isoformat()) != "complete"
        return Reading(hours_since_end(yesterday) if late else 0.0, subject=yesterday.isoformat())

    def drift(self, site: QuerySite) -> Reading:
        _, docs = self.health.batch_days(site.site_id, 1)
        if not docs:
            return Reading(None, "no day has been reconciled yet")
        doc = docs[0]
        figures = [
            abs(float(v)) for v in (doc.get("pageviews_drift_pct"), doc.get("visitors_drift_pct")) if v is not None
        ]
        if not figures:
            return Reading(
                None, f"the reconciliation of {doc.get('day')} has no drift figure", subject=str(doc.get("day"))
            )
        return Reading(max(figures), subject=str(doc.get("day")))
