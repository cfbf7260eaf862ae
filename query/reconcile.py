"""Reconciliation: how far the speed layer was off for a day, once the batch layer settled it.

After a rollup, each settled day still inside the realtime retention window is compared:
page views and visitors from the Redis counters versus the exact batch figures. The drift
is recorded per site and day (collection ``reconciliation``) so the product can show how
much the live numbers can be trusted, and operators notice a speed layer gone wrong.
"""

from __future__ import annotations

import datetime as dt
import time
from zoneinfo import ZoneInfo

from pymongo.database import Database

from footfall.config import Config
from historical.buckets import local_midnight, ms
from historical.store import DAILY, connect, daily_id, record_reconciliation
from realtime.reads import RealtimeQueries
from realtime.runtime import get_store


def _pct(realtime: int, batch: int) -> float | None:
    return round(100.0 * (realtime - batch) / batch, 3) if batch else None


def reconcile_day(db: Database, realtime: RealtimeQueries, site: str, day: str, tz: str) -> dict[str, object] | None:
    """Record realtime-vs-batch drift of one settled day; None if the realtime data expired."""
    batch = db[DAILY].find_one({"_id": daily_id(site, day)})
    if batch is None:
        return None
    date, zone = dt.date.fromisoformat(day), ZoneInfo(tz)
    start, end = ms(local_midnight(date, zone)), ms(local_midnight(date + dt.timedelta(days=1), zone))
    oldest = int(time.time() * 1000) - realtime.layout.retention_s * 1000
    if end <= oldest:
        return None
    covered_from = max(start, oldest)
    totals = realtime.totals(site, covered_from, end)
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
    record_reconciliation(db, site, day, drift)
    return drift


def reconcile_rolled_up(
    cfg: Config, days: list[tuple[str, str]], zones: dict[str, str], **_: object
) -> dict[str, dict[str, object]]:
    """Reconcile the ``(site, day)`` pairs a rollup just loaded; ``{"site|day": drift}``.

    Receives :data:`historical.signals.rollup_finished` (connected in :mod:`query.apps`)."""
    out: dict[str, dict[str, object]] = {}
    client, db = connect(cfg.mongo_url, cfg.mongo_db)
    try:
        realtime = RealtimeQueries(get_store())
        for site, day in days:
            drift = reconcile_day(db, realtime, site, day, zones[site])
            if drift is not None:
                out[f"{site}|{day}"] = drift
    finally:
        client.close()
    return out
