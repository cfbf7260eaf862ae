"""The Mongo-wire server over pymongo: upserts, a compound index and an aggregation pipeline."""

from __future__ import annotations

import pymongo
from pymongo import ASCENDING, DESCENDING, UpdateOne
from pymongo.errors import DuplicateKeyError

ROWS = [
    # (site, day, path, pageviews)
    ("demo", "2026-11-01", "/", 40),
    ("demo", "2026-11-01", "/pricing", 12),
    ("demo", "2026-11-02", "/", 35),
    ("demo", "2026-11-02", "/docs", 20),
    ("other", "2026-11-01", "/", 99),
]


def _load(coll: pymongo.collection.Collection) -> None:
    coll.bulk_write(
        [
            UpdateOne(
                {"_id": f"{site}|{day}|{path}"},
                {"$set": {"site_id": site, "day": day, "path": path, "pv": pv}},
                upsert=True,
            )
            for site, day, path, pv in ROWS
        ]
    )


def test_upsert_with_deterministic_ids_is_idempotent(mongo_db: pymongo.database.Database) -> None:
    """Loading the same rows twice leaves the same documents (no duplicates)."""
    coll = mongo_db["rollups"]
    _load(coll)
    _load(coll)
    assert coll.count_documents({}) == len(ROWS)
    assert coll.find_one({"_id": "demo|2026-11-02|/docs"})["pv"] == 20


def test_compound_unique_index_is_created_and_enforced(mongo_db: pymongo.database.Database) -> None:
    coll = mongo_db["rollups"]
    name = coll.create_index([("site_id", ASCENDING), ("day", ASCENDING), ("path", ASCENDING)], unique=True)
    _load(coll)
    keys = {idx["name"]: idx["key"] for idx in coll.list_indexes()}
    assert list(keys[name].items()) == [("site_id", 1), ("day", 1), ("path", 1)]
    try:
        coll.insert_one({"site_id": "demo", "day": "2026-11-01", "path": "/", "pv": 1})
    except DuplicateKeyError:
        pass
    else:
        raise AssertionError("the unique compound index let a duplicate in")


def test_aggregation_match_group_sort(mongo_db: pymongo.database.Database) -> None:
    """Top pages for one site over a range, as the API will ask."""
    coll = mongo_db["rollups"]
    _load(coll)
    result = list(
        coll.aggregate(
            [
                {"$match": {"site_id": "demo", "day": {"$gte": "2026-11-01", "$lt": "2026-11-03"}}},
                {"$group": {"_id": "$path", "pageviews": {"$sum": "$pv"}}},
                {"$sort": {"pageviews": DESCENDING, "_id": ASCENDING}},
            ]
        )
    )
    assert result == [
        {"_id": "/", "pageviews": 75},
        {"_id": "/docs", "pageviews": 20},
        {"_id": "/pricing", "pageviews": 12},
    ]
