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
nothing and deleting it removes what it left. Two imports of a site never share a day (the
second is refused, naming the first): an answer never adds one day twice.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

from pymongo import ASCENDING, InsertOne
from pymongo.database import Database

from historical.plausible_export import ImportedDay, PlausibleExport
from historical.store import BULK, breakdown_id, daily_id

IMPORTS, IMPORTED_DAILY, IMPORTED_BREAKDOWNS = "imports", "imported_daily", "imported_breakdowns"
LOADING, COMPLETE = "loading", "complete"


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
    days = [day.isoformat() for day in export.days]
    for other in db[IMPORTS].find(
        {"site_id": site_id, "state": COMPLETE, "first": {"$lte": last}, "last": {"$gte": first}}
    ):
        taken = db[IMPORTED_DAILY].find_one({"import_id": other["_id"], "day": {"$in": days}}, {"day": 1})
        if taken is not None:
            raise ImportRefused(
                f"{taken['day']} is imported already (import {other['_id']}, {other['first']} to {other['last']}): "
                "delete that import first"
            )
    ensure_indexes(db)
    import_id = uuid.uuid4().hex[:12]
    record = {
        "_id": import_id, "site_id": site_id, "source": source, "files": list(export.files), "first": first,
        "last": last, "days": len(days), "rows": dict(export.rows), "created": dt.datetime.now(dt.UTC),
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


def list_imports(db: Database, site_id: str | None = None) -> list[ImportSummary]:
    """The imports (of ``site_id``, or all), oldest first."""
    query = {} if site_id is None else {"site_id": site_id}
    return [ImportSummary.of(doc) for doc in db[IMPORTS].find(query).sort([("created", ASCENDING)])]


def delete(db: Database, import_id: str) -> int:
    """Remove an import and every document it wrote; the number of documents removed. KeyError
    for an unknown id. The record goes last: a delete cut short is finished by running it again."""
    if db[IMPORTS].find_one({"_id": import_id}, {"_id": 1}) is None:
        raise KeyError(import_id)
    db[IMPORTS].update_one({"_id": import_id}, {"$set": {"state": LOADING}})  # readers stop taking it first
    removed = sum(
        db[name].delete_many({"import_id": import_id}).deleted_count for name in (IMPORTED_DAILY, IMPORTED_BREAKDOWNS)
    )
    db[IMPORTS].delete_one({"_id": import_id})
    return removed


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
