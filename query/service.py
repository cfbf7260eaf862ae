"""The serving layer: answers the API's and the dashboard's questions from both stores.

Each query's range is cut by :mod:`query.plan` into settled days (Mongo rollups, exact)
and the rest (Redis counters, minute resolution, within retention); the answers are
stitched and every response says in ``sources`` which part came from where, what could
not be answered and how visitors were counted. Arguments are validated values (see
:mod:`query.params`); results are plain JSON-ready dicts.

Imported history (:mod:`historical.imported`) is a third source of whole days: another
product's daily figures, answered on days the site has not settled (or on every day it holds,
when the site prefers its imports), named in ``sources.imported``. What an import does not
hold (hours, engaged time, the other dimensions) is null or left out there, and said so.

Visitors. A bucket served by the batch layer has the exact number of distinct visitor ids;
a realtime bucket a HyperLogLog estimate (±0.81 %). Visitor ids are cookieless and rotate
daily (``collector/salts.py``), so nobody can be recognised across days: over a multi-day
range the count is the sum of the days' counts, and the response says so — it is what the
data can honestly support, not a shortcut.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol, TypeVar
from zoneinfo import ZoneInfo

from footfall.vocabulary import (
    CUSTOM_EVENT_DIMENSIONS,
    ENGAGEMENT_DIMENSIONS,
    EVENT_DIMENSIONS,
    SESSION_DIMENSIONS,
    VALUE_OTHER,
    QueryError,
)
from historical.imported import DIMENSIONS as IMPORTED_DIMENSIONS
from query.params import MAX_LIMIT, Filter, Range
from query.plan import Days, Piece, buckets, classify_bucket, ms, realtime_window_start, site_day, split
from query.settled_cache import SettledCache
from query.stores import ImportedHistory, RecentReads, Row, SettledReads, Settlement, Sums
from realtime.trends import Rising

R = TypeVar("R")

MAX_BUCKETS = 5000
REALTIME_TOP = 1000  # values per realtime piece merged into a breakdown (the long tail beyond is cut)
RATIO_METRICS = ("bounce_rate", "visit_duration")
HOURLY_METRICS = ("pageviews", "visitors", "sessions")  # what the hourly rollup holds
SESSION_METRICS = ("sessions", "bounce_rate", "visit_duration")

VISITORS_EXACT = "exact: distinct visitor ids (batch layer)"
VISITORS_HLL = "estimate: HyperLogLog merge of the realtime counters (standard error 0.81 %)"
VISITORS_DAILY_SUM = (
    "sum of per-day counts: cookieless visitor ids rotate daily, so a visitor returning on another day "
    "counts again; each day's count is exact where settled, a HyperLogLog estimate elsewhere"
)
REALTIME_TOP_NOTE = (
    f"realtime part: the top {REALTIME_TOP} {{what}} of each period; the rest, and the values past the speed "
    f"layer's caps, are counted under {VALUE_OTHER}, so the rows add up"
)
OTHER_PAIRS_NOTE = (
    f"realtime part: {VALUE_OTHER} holds the page views of pairs past the speed layer's caps; their visitors "
    "are not told apart by referrer or page, so that row's visitors cover the settled days only"
)
VISITORS_IMPORTED = "as the import counted them per day (imported days)"
IMPORTED_ENGAGEMENT_NOTE = (
    "imported days hold no engaged time or scroll depth: time_on_page, engaged_time and scroll_depth "
    "cover Footfall's own days only, null when the range has none"
)
PREVIOUS_PARTIAL = (
    "part of the previous period is older than the realtime window and not rolled up: its totals are "
    "incomplete (null when nothing of it is counted) and no change is given"
)


class ZonedSite(Protocol):
    """A site with its time zone (a :class:`footfall.models.Site`, or any such record)."""

    site_id: str
    timezone: str
    imports_win: bool


@dataclass(frozen=True, slots=True)
class QuerySite:
    """The site a query is about and the IANA zone its days are local to (apart from the
    collector's :class:`collector.sites.SiteInfo`, a site's collection settings)."""

    site_id: str
    tz: str
    imports_win: bool = False  # on a day both hold, answer from the import, not the rollup

    @classmethod
    def of(cls, site: ZonedSite) -> QuerySite:
        return cls(site.site_id, site.timezone, site.imports_win)


def iso(moment: dt.datetime) -> str:
    return moment.isoformat()


def _span(pieces: list[Piece]) -> dict[str, object]:
    if not pieces:
        return {"buckets": 0, "from": None, "to": None}
    return {"buckets": len(pieces), "from": iso(pieces[0].start), "to": iso(pieces[-1].end)}


class QueryService:
    """One query layer over the settled rollups and the recent counters, for the API and the dashboard."""

    def __init__(
        self,
        rollups: SettledReads,
        realtime: RecentReads,
        retention_s: int,
        now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
        cache: SettledCache | None = None,
        imported: ImportedHistory | None = None,
    ) -> None:
        self.rollups = rollups
        self.imported = imported  # None: no imported history is read
        self.rt = realtime
        self.retention_s = retention_s
        self.now = now
        self.cache = cache  # reads of settled days; None reads Mongo every time

    # -- building blocks (also of query.conversions) -----------------------------------------

    def settlement(self, site: QuerySite, start: dt.datetime) -> Settlement:
        """The days settled from ``start``'s site-local day on, and the watermark."""
        return self.rollups.settlement(site.site_id, site_day(start, ZoneInfo(site.tz)).isoformat())

    def settled_read(self, settled: Settlement, key: tuple[str, ...], days: set[str], fetch: Callable[[], R]) -> R:
        """``fetch()``, a read of the settled ``days`` (``key`` names it, site included),
        through the cache when there is one. The result is shared: never mutate it."""
        if self.cache is None or not days:
            return fetch()
        return self.cache.read(key, days, settled.generations, fetch)

    def imports(self, site: QuerySite, start: dt.datetime, end: dt.datetime) -> dict[str, str]:
        """The site-local days of ``[start, end)`` that imports cover, with the import of each."""
        if self.imported is None or end <= start:
            return {}
        tz = ZoneInfo(site.tz)
        last = site_day(end - dt.timedelta(microseconds=1), tz)
        return self.imported.days(site.site_id, site_day(start, tz).isoformat(), last.isoformat())

    def imported_absent(self, site: QuerySite, rng: Range, settled: Settlement, what: str) -> list[str]:
        """A note for an answer that takes nothing from imports (``what``: goals, funnels, ...)
        over a range with imported days the site has not settled: those count nothing there."""
        left = sorted(set(self.imports(site, rng.start, rng.end)) - settled.days)
        if not left:
            return []
        span = left[0] if len(left) == 1 else f"{left[0]} to {left[-1]}"
        return [f"imported history holds no {what}: its {len(left)} day(s) ({span}) count nothing here"]

    @staticmethod
    def days(site: QuerySite, settled: Settlement, imported: Mapping[str, str]) -> Days:
        return Days(settled.days, imported, site.imports_win)

    def pieces(
        self,
        site: QuerySite,
        start: dt.datetime,
        end: dt.datetime,
        settled: Settlement,
        imported: Mapping[str, str] | None = None,
    ) -> list[Piece]:
        """``[start, end)`` cut by :func:`query.plan.split`; days of ``imported`` are answered
        from their import where :class:`query.plan.Days` says so (none without it)."""
        realtime_from = realtime_window_start(self.now(), self.retention_s)
        return split(start, end, ZoneInfo(site.tz), self.days(site, settled, imported or {}), realtime_from)

    @staticmethod
    def sources(
        pieces: list[Piece], settled: Settlement, notes: list[str], imported: Mapping[str, str] | None = None
    ) -> dict[str, object]:
        by = {src: [p for p in pieces if p.source == src] for src in ("batch", "imported", "realtime", "missing")}
        imported_days = sorted({p.day for p in by["imported"] if p.day})
        return {
            "batch": {**_span(by["batch"]), "days": sorted({p.day for p in by["batch"] if p.day})},
            "imported": {
                **_span(by["imported"]),
                "days": imported_days,
                "imports": sorted({(imported or {})[day] for day in imported_days}),
            },
            "realtime": _span(by["realtime"]),
            "missing": _span(by["missing"]),
            "watermark": settled.watermark,
            "notes": notes,
        }

    # -- time series ---------------------------------------------------------------------

    def timeseries(
        self, site: QuerySite, metric: str, interval: str, rng: Range, filter_: Filter | None = None
    ) -> dict[str, object]:
        """One value per ``interval`` bucket of the range (``None`` where no layer has it)."""
        bks = buckets(rng.start, rng.end, interval, rng.tz)
        if len(bks) > MAX_BUCKETS:
            raise QueryError("interval", f"the range holds more than {MAX_BUCKETS} {interval}s; use a coarser interval")
        site_tz = ZoneInfo(site.tz)
        settled = self.settlement(site, bks[0][0])
        imported = self.imports(site, bks[0][0], bks[-1][1])
        window = realtime_window_start(self.now(), self.retention_s)
        days = self.days(site, settled, imported)
        pieces = [classify_bucket(s, e, site_tz, days, window) for s, e in bks]
        values: list[float | int | None] = [None] * len(pieces)
        notes: list[str] = []

        # Each rollup is read only for the days whose buckets use it: an hour series reads
        # no daily documents (on a Mongo-wire server without secondary indexes every read is a
        # pass over the collection).
        batch = [p for p in pieces if p.source == "batch" and p.day]
        whole_days = {p.day for p in batch if p.bucket is None}
        hours = any(p.bucket is not None for p in batch)
        hour_days = (
            {p.day for p in batch if p.bucket is not None} if filter_ is None and metric in HOURLY_METRICS else set()
        )
        sid = site.site_id
        if filter_ is not None:
            dim, value = filter_.dimension, filter_.value
            docs = self.settled_read(
                settled,
                ("filtered_daily", sid, dim, value),
                whole_days,
                lambda: self.rollups.filtered_daily(sid, dim, value, whole_days),
            )
        else:
            docs = self.daily(site, settled, whole_days)
        hour_docs = self.settled_read(
            settled, ("hourly", sid, site.tz), hour_days, lambda: self.rollups.hourly(sid, site.tz, hour_days)
        )
        for i, p in enumerate(pieces):
            if p.source != "batch" or p.day is None:
                continue
            if p.bucket is None:
                values[i] = _batch_value(metric, docs.get(p.day), filtered=filter_ is not None)
            elif hour_days and p.day not in hour_docs.stale:
                doc = hour_docs.docs.get((p.day, p.bucket))
                values[i] = int(doc.get(metric) or 0) if doc else 0
        if hour_docs.stale & hour_days:
            notes.append(
                "null on days with a clock change rolled up before hours were buckets by instant: "
                "re-roll them (manage.py rollup --legacy-hours)"
            )
        if filter_ is not None and hours:
            notes.append("settled hours cannot be filtered: filtered series are per day in the batch layer")
        if filter_ is not None and metric not in {"pageviews", "visitors"}:
            notes.append(f"{metric} is not broken down by dimension; filtered values are null")
        if metric in RATIO_METRICS and hours:
            notes.append(f"{metric} is rolled up per day, not per hour")
        self._imported_points(site, metric, filter_, pieces, imported, values, notes)

        realtime = [(i, p) for i, p in enumerate(pieces) if p.source == "realtime"]
        if realtime and metric in {"pageviews", "visitors"}:
            rt_filter = (filter_.dimension, filter_.value) if filter_ else None
            got = self.rt.spans(site.site_id, metric, [(ms(p.start), ms(p.end)) for _, p in realtime], rt_filter)
            for (i, _), value in zip(realtime, got, strict=True):
                values[i] = value
        elif realtime:
            notes.append(f"{metric} needs sessions, which only the nightly rollup builds: null until the day settles")
        if any(p.source == "missing" for p in pieces):
            notes.append("null where the period is older than the realtime window and not rolled up yet")
        if metric == "visitors":
            kinds = {p.source for p in pieces} - {"missing"}
            notes.append(
                "visitors per bucket: "
                + "; ".join(
                    text
                    for kind, text in (
                        ("batch", VISITORS_EXACT),
                        ("imported", VISITORS_IMPORTED),
                        ("realtime", VISITORS_HLL),
                    )
                    if kind in kinds
                )
            )
        return {
            "site_id": site.site_id,
            "metric": metric,
            "interval": interval,
            "tz": rng.tz.key,
            "points": [
                {"t": iso(p.start), "value": v, "source": p.source} for p, v in zip(pieces, values, strict=True)
            ],
            "sources": self.sources(pieces, settled, notes, imported),
        }

    def _imported_points(
        self,
        site: QuerySite,
        metric: str,
        filter_: Filter | None,
        pieces: list[Piece],
        imported: Mapping[str, str],
        values: list[float | int | None],
        notes: list[str],
    ) -> None:
        """Fill the buckets of imported days: whole days from their import, smaller buckets
        null (an import holds days only)."""
        whole = imported_days(pieces, imported)
        if any(p.source == "imported" and p.bucket is not None for p in pieces):
            notes.append("imported days hold whole days only: their smaller buckets are null")
        if not whole or self.imported is None:
            return
        sid = site.site_id
        if filter_ is not None and filter_.dimension not in IMPORTED_DIMENSIONS:
            notes.append(f"imports hold no {filter_.dimension} breakdown: filtered values of imported days are null")
            return
        if filter_ is not None:
            figures = self.imported.filtered_daily(sid, filter_.dimension, filter_.value, whole)
        else:
            figures = self.imported.daily(sid, whole)
        for i, p in enumerate(pieces):
            if p.source == "imported" and p.day in whole:
                values[i] = _imported_value(metric, figures.get(p.day), filtered=filter_ is not None)

    # -- totals --------------------------------------------------------------------------

    def daily(self, site: QuerySite, settled: Settlement, days: set[str]) -> dict[str, dict]:
        sid = site.site_id
        return self.settled_read(settled, ("daily", sid), days, lambda: self.rollups.daily(sid, days))

    def totals(
        self, site: QuerySite, pieces: list[Piece], daily: dict[str, dict], imported: Mapping[str, Sums] | None = None
    ) -> dict[str, object]:
        """Page views, visitors, sessions, bounce rate and visit duration of ``pieces``: their
        settled days from ``daily`` and imported days from ``imported`` (either may hold more
        days), the rest from Redis."""
        sums = Sums()
        for p in pieces:
            if p.source == "batch" and p.day in daily:
                sums.add(daily[p.day])
            elif p.source == "imported" and imported and p.day in imported:
                sums.include(imported[p.day])
        pageviews, visitors = sums.pageviews, sums.visitors
        for p in pieces:
            if p.source == "realtime":
                got = self.rt.totals(site.site_id, ms(p.start), ms(p.end))
                pageviews += got["pageviews"]
                visitors += got["visitors"]
        has_batch = any(p.source in ("batch", "imported") for p in pieces)
        # Nothing of the range is counted (all older than the realtime window, none settled):
        # unknown, not zero.
        known = any(p.source != "missing" for p in pieces)
        return {
            "pageviews": pageviews if known else None,
            "visitors": visitors if known else None,
            "sessions": sums.sessions if has_batch else None,
            "bounce_rate": round(sums.bounces / sums.sessions, 6) if sums.sessions else None,
            "visit_duration": round(sums.duration_s / sums.sessions, 3) if sums.sessions else None,
        }

    def aggregate(self, site: QuerySite, rng: Range, compare: bool) -> dict[str, object]:
        """Totals of the range and, with ``compare``, of the period of equal length before it
        (both read with one ``batch_runs`` and one daily read)."""
        before_start = rng.start - (rng.end - rng.start)
        settled = self.settlement(site, before_start if compare else rng.start)
        imported = self.imports(site, before_start if compare else rng.start, rng.end)
        pieces = self.pieces(site, rng.start, rng.end, settled, imported)
        before_pieces = self.pieces(site, before_start, rng.start, settled, imported) if compare else []
        daily = self.daily(site, settled, batch_days(pieces + before_pieces))
        imported_daily = self.imported_daily(site, pieces + before_pieces, imported)
        current = self.totals(site, pieces, daily, imported_daily)
        previous: dict[str, object] = {}
        previous_partial = False
        if compare:
            previous = self.totals(site, before_pieces, daily, imported_daily)
            previous_partial = any(p.source == "missing" for p in before_pieces)
        results = {}
        for name, value in current.items():
            entry: dict[str, object] = {"value": value}
            if compare:
                before = previous[name]
                entry["previous"] = before
                # A change against a partly uncounted period would be an artefact of the gap.
                comparable = isinstance(value, int | float) and isinstance(before, int | float) and before
                entry["change"] = round((value - before) / before, 6) if comparable and not previous_partial else None
            results[name] = entry
        notes = [self.visitor_note(pieces, rng)]
        if previous_partial:
            notes.append(PREVIOUS_PARTIAL)
        if any(p.source == "realtime" for p in pieces):
            notes.append("sessions, bounce_rate and visit_duration cover the settled days only")
        if any(p.source == "missing" for p in pieces):
            notes.append("part of the range is older than the realtime window and not rolled up yet: not counted")
        return {
            "site_id": site.site_id,
            "from": iso(rng.start),
            "to": iso(rng.end),
            "tz": rng.tz.key,
            "results": results,
            "sources": self.sources(pieces, settled, notes, imported),
        }

    def imported_daily(self, site: QuerySite, pieces: list[Piece], imported: Mapping[str, str]) -> dict[str, Sums]:
        """The totals of the imported days among ``pieces``."""
        days = imported_days(pieces, imported)
        return self.imported.daily(site.site_id, days) if days and self.imported is not None else {}

    @staticmethod
    def visitor_note(pieces: list[Piece], rng: Range) -> str:
        kinds = {p.source for p in pieces} - {"missing"}
        if len(pieces) > 1 or rng.end - rng.start > dt.timedelta(days=1):
            note = f"visitors: {VISITORS_DAILY_SUM}"
        elif kinds == {"imported"}:
            return f"visitors: {VISITORS_IMPORTED}"
        else:
            return f"visitors: {VISITORS_EXACT if kinds == {'batch'} else VISITORS_HLL}"
        return f"{note}; {VISITORS_IMPORTED}" if "imported" in kinds else note

    # -- breakdowns ----------------------------------------------------------------------

    def breakdown(
        self,
        site: QuerySite,
        dim: str,
        rng: Range,
        limit: int,
        page: int,
        metrics: tuple[str, ...],
        *,
        ref: str | None = None,
        path: str | None = None,
    ) -> dict[str, object]:
        """Values of ``dim`` ranked by page views over the range, one page of ``limit``.

        With ``dim == "refpage"`` and ``ref`` (or ``path``) set: the pages that referrer
        drives traffic to (or the referrers of that page)."""
        settled = self.settlement(site, rng.start)
        imported = self.imports(site, rng.start, rng.end)
        pieces = self.pieces(site, rng.start, rng.end, settled, imported)
        notes = []
        days = batch_days(pieces)
        sid = site.site_id
        settled_sums = self.settled_read(
            settled,
            ("breakdown", sid, dim, ref or "", path or ""),
            days,
            lambda: self.rollups.breakdown(sid, dim, days, ref=ref, page=path),
        )
        # A copy: the realtime part is added to it, and the cached sums are shared.
        merged = {value: sums.copy() for value, sums in settled_sums.items()}
        realtime = [p for p in pieces if p.source == "realtime"]
        rankings: list[tuple[Piece, dict[str, tuple[str, int]]]] = []
        if realtime and dim in SESSION_DIMENSIONS:
            notes.append(f"{dim} needs sessions, which only the nightly rollup builds: recent days are not included")
        elif realtime and dim in CUSTOM_EVENT_DIMENSIONS:
            for p in realtime:
                rows = self.rt.custom_events(site.site_id, ms(p.start), ms(p.end), REALTIME_TOP, rest_as_other=True)
                for row in rows:
                    sums = merged.setdefault(row.value, Sums())
                    sums.events += row.events
                    sums.visitors += row.visitors
            notes.append(REALTIME_TOP_NOTE.format(what="event names"))
        elif realtime and dim in EVENT_DIMENSIONS:
            rankings = [(p, self._realtime_ranking(site.site_id, dim, p, ref, path)) for p in realtime]
            for _, ranking in rankings:
                for value, (_, pageviews) in ranking.items():
                    merged.setdefault(value, Sums()).pageviews += pageviews
            notes.append(REALTIME_TOP_NOTE.format(what="values"))
            if (ref is not None or path is not None) and any(
                ranking.get(VALUE_OTHER, ("", 0))[0] is None for _, ranking in rankings
            ):
                notes.append(OTHER_PAIRS_NOTE)
            if dim in ENGAGEMENT_DIMENSIONS and ref is None and path is None:
                self._add_realtime_engagement(site.site_id, dim, realtime, merged)
                if "scroll_depth" in metrics:
                    notes.append("scroll_depth covers the settled days only: the speed layer does not keep it")
        if any(p.source == "missing" for p in pieces):
            notes.append("part of the range is older than the realtime window and not rolled up yet: not counted")
        notes.append(self.visitor_note(pieces, rng))
        # Footfall's own part of each row, before imported days join it: engagement comes from it only.
        own = {value: sums.copy() for value, sums in merged.items()}
        has_own = any(p.source in ("batch", "realtime") for p in pieces)
        self._add_imported(site, dim, pieces, imported, merged, notes, pairs=ref is not None or path is not None)
        if any(p.source == "imported" for p in pieces) and {"time_on_page", "engaged_time", "scroll_depth"} & set(
            metrics
        ):
            notes.append(IMPORTED_ENGAGEMENT_NOTE)
        # Custom events are ranked by events (they have no page views), the rest by page views.
        by_events = dim in CUSTOM_EVENT_DIMENSIONS
        ranked = sorted(merged.items(), key=lambda kv: (-(kv[1].events if by_events else kv[1].pageviews), kv[0]))
        chosen = ranked[(page - 1) * limit : page * limit]
        if rankings and chosen:
            redis_dim = "refpage" if ref is not None or path is not None else dim
            self._add_realtime_visitors(site.site_id, redis_dim, rankings, chosen)
        return {
            "site_id": site.site_id,
            "from": iso(rng.start),
            "to": iso(rng.end),
            "tz": rng.tz.key,
            "metrics": list(metrics),
            "results": [
                _row(value, sums, metrics, dim, own.get(value, Sums()) if has_own else None) for value, sums in chosen
            ],
            "page": page,
            "limit": limit,
            "total": len(ranked),
            "sources": self.sources(pieces, settled, notes, imported),
        }

    def _add_imported(
        self,
        site: QuerySite,
        dim: str,
        pieces: list[Piece],
        imported: Mapping[str, str],
        merged: dict[str, Sums],
        notes: list[str],
        *,
        pairs: bool,
    ) -> None:
        """Add the imported days' counts of ``dim`` to the rows (none for a breakdown an
        import does not hold, which the notes say)."""
        days = imported_days(pieces, imported)
        if not days or self.imported is None:
            return
        if pairs or dim not in IMPORTED_DIMENSIONS:
            what = "referrer-page pairs" if pairs else f"{dim} breakdown"
            notes.append(f"imports hold no {what}: imported days are not included")
            return
        for value, sums in self.imported.breakdown(site.site_id, dim, days).items():
            merged.setdefault(value, Sums()).include(sums)

    def _realtime_ranking(
        self, site_id: str, dim: str, piece: Piece, ref: str | None, path: str | None
    ) -> dict[str, tuple[str | None, int]]:
        """The piece's top values by page views: shown value → (value in Redis, page views).
        A referrer's (page's) pairs past the speed layer's caps are one ``(other)`` row with
        no value in Redis (:meth:`RealtimeQueries.pairs`)."""
        start, end = ms(piece.start), ms(piece.end)
        if ref is not None or path is not None:
            pairs = self.rt.pairs(site_id, start, end, REALTIME_TOP, ref=ref, path=path)
            return {shown: (member, pv) for shown, member, pv in pairs}
        ranked = self.rt.ranking(site_id, dim, start, end, REALTIME_TOP, rest_as_other=True)
        return {value: (value, pv) for value, pv in ranked}

    def _add_realtime_engagement(
        self,
        site_id: str,
        dim: str,
        pieces: list[Piece],
        merged: dict[str, Sums],
    ) -> None:
        """Add each realtime piece's engaged time and reports to the rows: a value with no row
        (its page views went to ``(other)``, past a cap or the top values) adds them to the
        ``(other)`` row, which engagement's own caps fill too, so the rows' engaged time adds
        up. A report's page may have its row from another day (viewed before midnight)."""
        for p in pieces:
            for value, got in self.rt.engagement(site_id, dim, ms(p.start), ms(p.end)).items():
                sums = merged.setdefault(value if value in merged else VALUE_OTHER, Sums())
                sums.engaged_ms += got.engaged_ms
                sums.engagements += got.reports

    def _add_realtime_visitors(
        self,
        site_id: str,
        redis_dim: str,
        rankings: list[tuple[Piece, dict[str, tuple[str, int]]]],
        chosen: list[tuple[str, Sums]],
    ) -> None:
        """Add each realtime piece's HLL visitors to the rows shown (only those: one PFCOUNT
        over the piece's minutes per row, so not for the whole ranking)."""
        for p, ranking in rankings:
            members = [(sums, ranking.get(value, (None, 0))[0]) for value, sums in chosen]
            shown = [(sums, member) for sums, member in members if member is not None]
            counts = self.rt.visitors(site_id, redis_dim, ms(p.start), ms(p.end), [m for _, m in shown])
            for (sums, _), count in zip(shown, counts, strict=True):
                sums.visitors += count

    # -- right now -----------------------------------------------------------------------

    def realtime(self, site: QuerySite, minutes: int, limit: int = 10) -> dict[str, object]:
        """The live view: concurrent visitors, page views per minute, top and rising values."""
        now = self.now()
        now_ms = ms(now)
        end = (now_ms // 60_000 + 1) * 60_000
        start = end - minutes * 60_000
        sid = site.site_id
        view = self.rt.live(sid, start, end, now_ms, limit=limit, flows=min(MAX_LIMIT, 4 * limit))

        def rows(found: list[Row]) -> list[dict[str, object]]:
            return [{"value": r.value, "pageviews": r.pageviews, "visitors": r.visitors} for r in found]

        def rising(found: list[Rising]) -> list[dict[str, object]]:
            return [{"value": r.value, "recent": r.recent, "baseline_mean": r.baseline_mean, "z": r.z} for r in found]

        return {
            "site_id": sid,
            "minutes": minutes,
            "now": iso(now),
            "concurrent_visitors": view.concurrent,
            "pageviews": view.totals["pageviews"],
            "visitors": view.totals["visitors"],
            "pageviews_per_minute": [
                {"t": iso(dt.datetime.fromtimestamp(t / 1000, dt.UTC)), "value": v}
                for t, v in view.pageviews_per_minute
            ],
            "top_pages": rows(view.top_pages),
            "top_referrers": rows(view.top_referrers),
            "rising_pages": rising(view.rising_pages),
            "rising_referrers": rising(view.rising_referrers),
            "flows": [{"referrer": ref, "page": page, "pageviews": pv} for ref, page, pv in view.flows],
            "sources": {
                "realtime": {
                    "from": iso(dt.datetime.fromtimestamp(start / 1000, dt.UTC)),
                    "to": iso(dt.datetime.fromtimestamp(end / 1000, dt.UTC)),
                },
                "notes": [f"visitors: {VISITORS_HLL}", "concurrent: visitors seen in the last 5 minutes"],
            },
        }


def batch_days(pieces: list[Piece]) -> set[str]:
    """The settled days among ``pieces``."""
    return {p.day for p in pieces if p.source == "batch" and p.day}


def imported_days(pieces: list[Piece], imported: Mapping[str, str]) -> dict[str, str]:
    """The whole imported days among ``pieces``, each with its import (from ``imported``)."""
    return {p.day: imported[p.day] for p in pieces if p.source == "imported" and p.day and p.bucket is None}


def _batch_value(metric: str, doc: dict | None, filtered: bool) -> float | int | None:
    if filtered:
        if metric not in {"pageviews", "visitors"}:
            return None
        return int(doc.get(metric) or 0) if doc else 0
    if doc is None:
        return 0 if metric in {"pageviews", "visitors", "sessions"} else None
    if metric == "bounce_rate":
        return doc.get("bounce_rate") if doc.get("sessions") else None
    if metric == "visit_duration":
        return doc.get("visit_duration_s") if doc.get("sessions") else None
    return int(doc.get(metric) or 0)


def _imported_value(metric: str, sums: Sums | None, filtered: bool) -> float | int | None:
    """A whole imported day's ``metric`` (as :func:`_batch_value` for a settled day)."""
    if filtered and metric not in {"pageviews", "visitors"}:
        return None
    if metric in {"pageviews", "visitors", "sessions"}:
        return 0 if sums is None else getattr(sums, metric)
    if sums is None or not sums.sessions:
        return None
    if metric == "bounce_rate":
        return round(sums.bounces / sums.sessions, 6)
    return round(sums.duration_s / sums.sessions, 3)


def _row(value: str, sums: Sums, metrics: tuple[str, ...], dim: str, own: Sums | None) -> dict[str, object]:
    """One breakdown row: ``metrics`` of ``value`` from its sums; a metric that does not
    exist for ``dim`` (sessions but per entry page, time on page but per page, ...) is None.
    Engagement comes from ``own``, Footfall's own part of the sums (None: the range has none)."""
    row: dict[str, object] = {"value": value}
    for name in metrics:
        row[name] = _metric(name, sums, dim, own)
    return row


def _metric(name: str, sums: Sums, dim: str, own: Sums | None) -> float | int | None:
    if name == "pageviews":
        return sums.pageviews
    if name == "visitors":
        return sums.visitors
    if name == "events":
        return sums.events if dim in CUSTOM_EVENT_DIMENSIONS else None
    if name in ("time_on_page", "scroll_depth", "engaged_time"):
        return None if own is None else _engagement(name, own, dim)
    if dim != "entry_page":
        return None  # sessions are per entry page only
    if name == "sessions":
        return sums.sessions
    if name == "bounce_rate":
        return round(sums.bounces / sums.sessions, 6) if sums.sessions else None
    return round(sums.duration_s / sums.sessions, 3) if sums.sessions else None


def _engagement(name: str, sums: Sums, dim: str) -> float | None:
    if name == "time_on_page":  # engaged seconds per page view of the page
        return round(sums.engaged_ms / 1000 / sums.pageviews, 3) if dim == "page" and sums.pageviews else None
    if name == "scroll_depth":  # mean deepest scroll of the page views that reported one, percent
        return round(sums.scroll_sum / sums.scroll_views, 3) if dim == "page" and sums.scroll_views else None
    return round(sums.engaged_ms / 1000, 3) if dim in ("page", "ref") else None  # engaged seconds in all
