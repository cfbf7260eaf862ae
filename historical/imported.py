"""Imported history in MongoDB: another product's daily aggregates, kept apart from the rollups.

Collections (database ``MONGO_DB``):

=======================  ========================================  =================================
collection               ``_id``                                   content
=======================  ========================================  =================================
``imports``              the import's id                           ``site_id``, ``source``, ``files``,
                                                                   ``first``/``last`` (days), ``rows``
                                                                   per table, ``days``, ``created``,
                                                                   ``state`` (loading, complete)
``imported_daily``       ``import|site|day``                       the day's visitors, page views,
                                                                   visits, bounces, visit duration (s)
``imported_breakdowns``  ``import|site|day|dimension|sha1(value)``  per value of a dimension: visitors,
                                                                   page views, visits or events
=======================  ========================================  =================================

An import is recorded ``loading`` before its documents are written and ``complete`` after:
readers take the days of complete imports only, so an import that failed half-way answers
nothing and deleting it removes what it left. An import's days are every day from its first
to its last (a day without rows had no traffic), and two imports of a site never share a day
(the second is refused, naming the first): an answer never adds one day twice.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from pymongo import ASCENDING, InsertOne
from pymongo.database import Database

from historical.plausible_export import DIMENSIONS as PLAUSIBLE_DIMENSIONS
from historical.plausible_export import ImportedDay, PlausibleExport
from historical.reads import Sums
from historical.store import BULK, breakdown_id, daily_id

IMPORTS, IMPORTED_DAILY, IMPORTED_BREAKDOWNS = "imports", "imported_daily", "imported_breakdowns"
LOADING, COMPLETE = "loading", "complete"
DIMENSIONS: tuple[str, ...] = PLAUSIBLE_DIMENSIONS  # the breakdowns an import holds


class ImportRefused(ValueError):
    """An import that would overlap the days of one already there (nothing was written)."""


@dataclass(frozen=True)
class ImportSummary:
    """What ``manage.py imports list`` shows of an import."""

    import_id: str
    site_id: str
    source: str
    files: tuple[str, ...]
    first: str
    last: str
    days: int
    rows: dict[str, int]
    created: dt.datetime
    state: str

    @classmethod
    def of(cls, doc: dict) -> ImportSummary:
        return cls(
            doc["_id"], doc["site_id"], doc["source"], tuple(doc["files"]), doc["first"], doc["last"], doc["days"],
            dict(doc["rows"]), doc["created"], doc["state"],
        )  # fmt: skip


def ensure_indexes(db: Database) -> None:
    db[IMPORTS].create_index([("site_id", ASCENDING), ("first", ASCENDING)])
    db[IMPORTED_DAILY].create_index([("site_id", ASCENDING), ("day", ASCENDING)])
    db[IMPORTED_BREAKDOWNS].create_index([("site_id", ASCENDING), ("dimension", ASCENDING), ("day", ASCENDING)])


def save(db: Database, site_id: str, export: PlausibleExport, source: str = "plausible") -> ImportSummary:
    """Store ``export`` as a new import of ``site_id``; ImportRefused if a complete import of the
    site holds one of its days."""
    first, last = export.first.isoformat(), export.last.isoformat()
    # Any state: a loading import is one under way, or one cut short that its delete finishes.
    other = db[IMPORTS].find_one({"site_id": site_id, "first": {"$lte": last}, "last": {"$gte": first}})
    if other is not None:
        raise ImportRefused(
            f"{max(first, other['first'])} is imported already (import {other['_id']}, {other['first']} to "
            f"{other['last']}): delete that import first"
        )
    ensure_indexes(db)
    import_id = uuid.uuid4().hex[:12]
    record = {
        "_id": import_id, "site_id": site_id, "source": source, "files": list(export.files), "first": first,
        "last": last, "days": len(export.days), "rows": dict(export.rows), "created": dt.datetime.now(dt.UTC),
        "state": LOADING,
    }  # fmt: skip
    db[IMPORTS].insert_one(record)
    for collection, docs in ((IMPORTED_DAILY, _daily(import_id, site_id, export)),
                             (IMPORTED_BREAKDOWNS, _breakdowns(import_id, site_id, export))):  # fmt: skip
        batch: list[InsertOne] = []
        for doc in docs:
            batch.append(InsertOne(doc))
            if len(batch) == BULK:
                db[collection].bulk_write(batch, ordered=False)
                batch = []
        if batch:
            db[collection].bulk_write(batch, ordered=False)
    db[IMPORTS].update_one({"_id": import_id}, {"$set": {"state": COMPLETE}})
    return ImportSummary.of({**record, "state": COMPLETE})


def _daily(import_id: str, site_id: str, export: PlausibleExport) -> Iterator[dict]:
    for day, imported in export.days.items():
        if imported.totals:
            key = day.isoformat()
            doc_id = f"{import_id}|{daily_id(site_id, key)}"
            yield {"_id": doc_id, "import_id": import_id, "site_id": site_id, "day": key, **imported.totals}


def _breakdowns(import_id: str, site_id: str, export: PlausibleExport) -> Iterator[dict]:
    for day, imported in export.days.items():
        yield from _day_breakdowns(import_id, site_id, day.isoformat(), imported)


def _day_breakdowns(import_id: str, site_id: str, day: str, imported: ImportedDay) -> Iterator[dict]:
    for dimension, values in imported.breakdowns.items():
        for value, counts in values.items():
            yield {
                "_id": f"{import_id}|{breakdown_id(site_id, day, dimension, value)}", "import_id": import_id,
                "site_id": site_id, "day": day, "dimension": dimension, "value": value, **counts,
            }  # fmt: skip


class Imports:
    """The imports of one database: listed and deleted (the command, the API, the admin), and
    their figures read by the query layer (:class:`query.stores.ImportedHistory`: complete
    imports only). Days are site-local ``YYYY-MM-DD``; ``days`` arguments map each day to the
    import that holds it (from :meth:`days`), so a document of an import that is loading or
    being deleted is never read."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def listed(self, site_id: str | None = None) -> list[ImportSummary]:
        """The imports (of ``site_id``, or all), oldest first."""
        query = {} if site_id is None else {"site_id": site_id}
        return [ImportSummary.of(doc) for doc in self.db[IMPORTS].find(query).sort([("created", ASCENDING)])]

    def one(self, import_id: str) -> ImportSummary | None:
        """The import ``import_id``, None when there is none."""
        doc = self.db[IMPORTS].find_one({"_id": import_id})
        return None if doc is None else ImportSummary.of(doc)

    def delete(self, import_id: str, site_id: str | None = None) -> int:
        """Remove an import (of ``site_id``, if given) and every document it wrote; the number of
        documents removed. KeyError for an unknown id. The record goes last: a delete cut short
        is finished by running it again."""
        query = {"_id": import_id} if site_id is None else {"_id": import_id, "site_id": site_id}
        if self.db[IMPORTS].find_one(query, {"_id": 1}) is None:
            raise KeyError(import_id)
        self.db[IMPORTS].update_one({"_id": import_id}, {"$set": {"state": LOADING}})  # readers stop taking it first
        removed = sum(
            self.db[name].delete_many({"import_id": import_id}).deleted_count
            for name in (IMPORTED_DAILY, IMPORTED_BREAKDOWNS)
        )
        self.db[IMPORTS].delete_one({"_id": import_id})
        return removed

    def days(self, site: str, first: str, last: str) -> dict[str, str]:
        """Each day from ``first`` to ``last`` that a complete import of ``site`` covers, with its import id."""
        covered: dict[str, str] = {}
        query = {"site_id": site, "state": COMPLETE, "first": {"$lte": last}, "last": {"$gte": first}}
        for doc in self.db[IMPORTS].find(query, {"first": 1, "last": 1}):
            day = dt.date.fromisoformat(max(first, doc["first"]))
            end = dt.date.fromisoformat(min(last, doc["last"]))
            while day <= end:
                covered[day.isoformat()] = doc["_id"]
                day += dt.timedelta(days=1)
        return covered

    def daily(self, site: str, days: Mapping[str, str]) -> dict[str, Sums]:
        """The totals of each of ``days`` that has them (visits as sessions)."""
        return {doc["day"]: _sums(doc) for doc in self._docs(IMPORTED_DAILY, {"site_id": site}, days)}

    def breakdown(self, site: str, dim: str, days: Mapping[str, str]) -> dict[str, Sums]:
        """Per value of ``dim``, its counts summed over ``days``."""
        merged: dict[str, Sums] = {}
        for doc in self._docs(IMPORTED_BREAKDOWNS, {"site_id": site, "dimension": dim}, days):
            merged.setdefault(doc["value"], Sums()).include(_sums(doc))
        return merged

    def filtered_daily(self, site: str, dim: str, value: str, days: Mapping[str, str]) -> dict[str, Sums]:
        """Per day, the counts of one value of ``dim``."""
        query = {"site_id": site, "dimension": dim, "value": value}
        return {doc["day"]: _sums(doc) for doc in self._docs(IMPORTED_BREAKDOWNS, query, days)}

    def _docs(self, collection: str, query: dict, days: Mapping[str, str]) -> Iterable[dict]:
        if not days:
            return
        for doc in self.db[collection].find({**query, "day": {"$in": sorted(days)}}):
            if days.get(doc["day"]) == doc["import_id"]:
                yield doc


def _sums(doc: Mapping) -> Sums:
    """An imported document's counts as the rollups' sums: visits are sessions, and the visit
    duration is the day's total in seconds (the rollups keep a mean)."""
    return Sums(
        pageviews=int(doc.get("pageviews") or 0),
        visitors=int(doc.get("visitors") or 0),
        sessions=int(doc.get("visits") or 0),
        bounces=int(doc.get("bounces") or 0),
        duration_s=float(doc.get("visit_duration") or 0),
        events=int(doc.get("events") or 0),
    )
