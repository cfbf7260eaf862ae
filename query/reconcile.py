"""Reconciliation: how far the speed layer was off for a day, once the batch layer settled it.

After a rollup, each settled day still inside the realtime retention window is compared:
page views and visitors from the Redis counters versus the exact batch figures. The drift
is recorded per site and day by the batch side (collection ``reconciliation``) so the product
can show how much the live numbers can be trusted, and operators notice a speed layer gone
wrong. :func:`reconcile_day` reads and records through the stores' own modules only.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Mapping
from functools import partial
from zoneinfo import ZoneInfo

from footfall.config import Config
from historical.buckets import local_midnight, ms
from historical.reads import RollupReads
from historical.store import connect, record_reconciliation
from query.stores import RecentReads, SettledReads
from realtime.reads import RealtimeQueries
from realtime.runtime import get_store

RecordDrift = Callable[[str, str, Mapping[str, object]], None]  # (site, day, drift)


def _pct(realtime: int, batch: int) -> float | None:
    return round(100.0 * (realtime - batch) / batch, 3) if batch else None


def reconcile_day(
    settled: SettledReads,
    recent: RecentReads,
    record: RecordDrift,
    site: str,
    day: str,
    tz: str,
    *,
    retention_s: int,
    now_ms: int | None = None,
) -> dict[str, object] | None:
    """Record realtime-vs-batch drift of one settled day; None if the day has no batch totals
    or the realtime counters (kept ``retention_s``) expired before its end."""
    batch = settled.daily(site, [day]).get(day)
    if batch is None:
        return None
    date, zone = dt.date.fromisoformat(day), ZoneInfo(tz)
    start, end = ms(local_midnight(date, zone)), ms(local_midnight(date + dt.timedelta(days=1), zone))
    oldest = (int(time.time() * 1000) if now_ms is None else now_ms) - retention_s * 1000
    if end <= oldest:
        return None
    covered_from = max(start, oldest)
    totals = recent.totals(site, covered_from, end)
    drift = {
        "realtime_pageviews": totals["pageviews"],
        "batch_pageviews": batch["pageviews"],
        "pageviews_drift": totals["pageviews"] - batch["pageviews"],
        "pageviews_drift_pct": _pct(totals["pageviews"], batch["pageviews"]),
        "realtime_visitors": totals["visitors"],
        "batch_visitors": batch["visitors"],
        "visitors_drift_pct": _pct(totals["visitors"], batch["visitors"]),
        "coverage": round((end - covered_from) / (end - start), 4),  # < 1 when realtime kept part of the day
        "checked_at": dt.datetime.now(dt.UTC),
    }
    record(site, day, drift)
    return drift


def reconcile_rolled_up(
    cfg: Config, days: list[tuple[str, str]], zones: dict[str, str], **_: object
) -> dict[str, dict[str, object]]:
    """Reconcile the ``(site, day)`` pairs a rollup just loaded; ``{"site|day": drift}``.

    Receives :data:`historical.signals.rollup_finished` (connected in :mod:`query.apps`)."""
    out: dict[str, dict[str, object]] = {}
    client, db = connect(cfg.mongo_url, cfg.mongo_db)
    try:
        settled, recent, record = RollupReads(db), RealtimeQueries(get_store()), partial(record_reconciliation, db)
        for site, day in days:
            drift = reconcile_day(settled, recent, record, site, day, zones[site], retention_s=cfg.realtime_retention_s)
            if drift is not None:
                out[f"{site}|{day}"] = drift
    finally:
        client.close()
    return out
