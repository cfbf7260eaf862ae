"""Historical rollups in MongoDB (pymongo only, so MongoDB and any Mongo-wire server serve alike).

Collections (database ``MONGO_DB``):

=====================  =========================================  ==================================
collection             ``_id`` (deterministic)                    content
=====================  =========================================  ==================================
``rollup_daily``       ``site|day``                               page views, visitors, sessions,
                                                                  bounce rate, visit duration,
                                                                  events, engaged time
``rollup_hourly``      ``site|day|<UTC start>``, e.g.             per hourly bucket of the day
                       ``site|day|2026-10-25T01:00Z``
``rollup_breakdowns``  ``site|day|dimension|sha1(value)``         per dimension value (pages,
                                                                  referrers, referrer→page, UTM,
                                                                  custom events, event properties,
                                                                  goals, ...; engaged time on pages
                                                                  and referrers)
``rollup_goal_sources`` ``site|day|dimension|sha1(value)``        the ``goal_src:*``/``goal_base:*``
                                                                  /``goal_revsrc:*`` rows: where
                                                                  goals' converting
                                                                  visitors came from (apart, so that
                                                                  other breakdown reads never pass
                                                                  over them)
``rollup_funnels``     ``site|day|funnel_id``                     per funnel: ``name``, ``steps`` (per
                                                                  step ``visitors``, ``median_ms``,
                                                                  ``times_ms``: see below)
``rollup_journeys``    ``site|day|chunk``                         the day's sessions' kept steps per
                                                                  visitor number, in chunks of a few
                                                                  MB (:mod:`historical.journeys`)
``batch_runs``         ``site|day``                               what was rolled up, from how many
                                                                  events, when: the batch watermark;
                                                                  ``generation`` new at every load
``reconciliation``     ``site|day``                               realtime vs batch drift of the day
=====================  =========================================  ==================================

``day`` is the site's local calendar day (``YYYY-MM-DD``). Its hourly buckets are instants,
not wall-clock labels (:mod:`historical.buckets`): a day whose clock falls back has 25 hour
documents, one that springs forward 23. Each holds ``start_ms``/``end_ms`` (UTC), ``local``
(the start on the site's clock with its offset, ISO 8601) and ``hour`` (the local hour, a
label only). Documents of the layout before (``site|day|HH``, no ``start_ms``) are still read
on days without a clock change, where each is exactly one bucket; days with a change that
still hold them are re-rolled by ``manage.py rollup --legacy-hours`` (the archive is the
master dataset; re-rolling a day replaces its documents).

A funnel document holds the attempts that started on its day (:mod:`spark_jobs.funnels`):
``steps[k]`` is step k+1 with ``visitors`` (distinct visitors whose best attempt of the day
reached it), ``median_ms`` (exact median time from the step before, null for the first step
and for steps nobody reached) and ``times_ms`` (those times as counts per bucket of
:data:`footfall.goals.FUNNEL_TIME_BOUNDS_MS`). Every funnel the job was given for the site has
a document for every day rolled up, zeros included; a funnel no longer given disappears from
the days rolled up again.

Loading a day *replaces* it:
every document is written with a deterministic ``_id`` (``ReplaceOne`` upsert), then the
day's documents not in the new set are deleted, then ``batch_runs`` is written last. The
same input therefore gives identical documents, a re-run never doubles anything, a run
killed mid-write is repaired by the next, and other days are never touched. Only after
``batch_runs`` names a day does the query layer treat it as settled.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit
from zoneinfo import ZoneInfo

import pymongo
from pymongo import ASCENDING, DESCENDING, DeleteMany, ReplaceOne
from pymongo.database import Database
from pymongo.errors import ConnectionFailure, ExecutionTimeout, PyMongoError

from footfall.ping import Ping
from footfall.vocabulary import GOAL_BASE_PREFIX, GOAL_REVENUE_SOURCE_PREFIX, GOAL_SOURCE_PREFIX
from historical.buckets import Bucket, bucket_at, bucket_key, day_buckets

# The rollup job reads MongoDB's URL (which may carry a password and TLS options) from this
# variable of its environment, never from its arguments: any local user can read a process's
# argv (ps, /proc/<pid>/cmdline), only its owner its environment. In client mode the driver
# inherits spark-submit's environment (historical.rollups.spark_submit_env).
MONGO_URL_VARIABLE = "FOOTFALL_ROLLUP_MONGO_URL"

DAILY, HOURLY, BREAKDOWNS, RUNS, RECONCILIATION = (
    "rollup_daily",
    "rollup_hourly",
    "rollup_breakdowns",
    "batch_runs",
    "reconciliation",
)
FUNNELS = "rollup_funnels"
GOAL_SOURCES = "rollup_goal_sources"
JOURNEYS = "rollup_journeys"  # each session's kept steps, in chunks (historical.journeys)
# Every collection holding a (site, day)'s rollup documents; batch_runs settles them.
ROLLUP_COLLECTIONS = (DAILY, HOURLY, BREAKDOWNS, GOAL_SOURCES, FUNNELS, JOURNEYS)
# Statements per bulk write. FerretDB 1.x (a Mongo-wire server some users run, and the local
# stack's until 2026-11-24) keeps every update statement's cursor open until the whole command
# ends, each holding one of its 100 SQLite connections; a command replacing more than ~100
# existing documents then waits forever for a connection (seen as a hung re-run of a day).
# 50 stays clear of that and costs MongoDB little: a day's documents are a few thousand at most.
BULK = 50


def daily_id(site: str, day: str) -> str:
    return f"{site}|{day}"


def hourly_id(site: str, day: str, start_ms: int) -> str:
    start = dt.datetime.fromtimestamp(start_ms / 1000, dt.UTC)
    return f"{site}|{day}|{bucket_key(start)}"


def hour_document(day: str, tz: str | None, start_ms: int) -> dict[str, object]:
    """The bucket fields of the hour document of ``day`` starting at ``start_ms`` in ``tz``.

    The end is the next bucket's start; a start that is no bucket of the day by Python's zone
    data (the JVM's tz database may differ for a recent rule change) ends an hour later or at
    the day's end, whichever is first, so the document is still written and readable."""
    zone = ZoneInfo(tz or "UTC")
    local_day = dt.date.fromisoformat(day)
    start = dt.datetime.fromtimestamp(start_ms / 1000, dt.UTC)
    bucket = bucket_at(local_day, zone, start_ms)
    if bucket is None:
        day_end = day_buckets(local_day, zone)[-1].end
        offset = start.astimezone(zone).utcoffset() or dt.timedelta(0)
        bucket = Bucket(start, min(start + dt.timedelta(hours=1), day_end), offset)
    local = bucket.local_start(zone)
    return {"start_ms": start_ms, "end_ms": bucket.end_ms, "local": local.isoformat(), "hour": local.hour}


def breakdown_id(site: str, day: str, dimension: str, value: str) -> str:
    # Values can be long URLs with '.' and '$'; a digest keeps ids short and safe.
    return f"{site}|{day}|{dimension}|{hashlib.sha1(value.encode()).hexdigest()}"  # noqa: S324 - an id, not security


def funnel_doc_id(site: str, day: str, funnel: str) -> str:
    return f"{site}|{day}|{funnel}"


def journey_doc_id(site: str, day: str, chunk: int) -> str:
    return f"{site}|{day}|{chunk}"


def ensure_indexes(db: Database) -> None:
    """Indexes for every query path of the API (idempotent)."""
    db[DAILY].create_index([("site_id", ASCENDING), ("day", ASCENDING)])
    db[HOURLY].create_index([("site_id", ASCENDING), ("day", ASCENDING), ("start_ms", ASCENDING)])
    db[BREAKDOWNS].create_index([("site_id", ASCENDING), ("dimension", ASCENDING), ("day", ASCENDING)])
    db[BREAKDOWNS].create_index(
        [("site_id", ASCENDING), ("dimension", ASCENDING), ("ref", ASCENDING), ("day", ASCENDING)]
    )
    db[BREAKDOWNS].create_index(
        [("site_id", ASCENDING), ("dimension", ASCENDING), ("page", ASCENDING), ("day", ASCENDING)]
    )
    db[BREAKDOWNS].create_index([("site_id", ASCENDING), ("day", ASCENDING)])
    db[GOAL_SOURCES].create_index([("site_id", ASCENDING), ("dimension", ASCENDING), ("day", ASCENDING)])
    db[GOAL_SOURCES].create_index([("site_id", ASCENDING), ("day", ASCENDING)])
    db[FUNNELS].create_index([("site_id", ASCENDING), ("funnel_id", ASCENDING), ("day", ASCENDING)])
    db[FUNNELS].create_index([("site_id", ASCENDING), ("day", ASCENDING)])
    db[JOURNEYS].create_index([("site_id", ASCENDING), ("day", ASCENDING)])
    db[RUNS].create_index([("site_id", ASCENDING), ("day", DESCENDING)])


@dataclass(frozen=True, slots=True)
class DayDocuments:
    """All documents of one (site, day), ready to load."""

    site_id: str
    day: str
    daily: dict[str, object]
    hourly: list[dict[str, object]]
    breakdowns: list[dict[str, object]]
    run: dict[str, object]
    funnels: list[dict[str, object]] = field(default_factory=list)  # each with its funnel_id
    # historical.journeys.journey_documents (each with its chunk); none: the day keeps no journeys
    journeys: list[dict[str, object]] = field(default_factory=list)


def is_goal_source(dimension: str) -> bool:
    """Whether a breakdown row of ``dimension`` is kept in ``rollup_goal_sources``."""
    return dimension.startswith((GOAL_SOURCE_PREFIX, GOAL_BASE_PREFIX, GOAL_REVENUE_SOURCE_PREFIX))


def _with_ids(day: DayDocuments) -> dict[str, list[dict]]:
    """The day's documents with their ids, by collection."""
    daily = {"_id": daily_id(day.site_id, day.day), "site_id": day.site_id, "day": day.day, **day.daily}
    hourly = [
        {"_id": hourly_id(day.site_id, day.day, int(h["start_ms"])), "site_id": day.site_id, "day": day.day, **h}
        for h in day.hourly
    ]
    breakdowns = [
        {
            "_id": breakdown_id(day.site_id, day.day, str(b["dimension"]), str(b["value"])),
            "site_id": day.site_id,
            "day": day.day,
            **b,
        }
        for b in day.breakdowns
    ]
    funnels = [
        {"_id": funnel_doc_id(day.site_id, day.day, str(f["funnel_id"])), "site_id": day.site_id, "day": day.day, **f}
        for f in day.funnels
    ]
    journeys = [
        {"_id": journey_doc_id(day.site_id, day.day, int(j["chunk"])), "site_id": day.site_id, "day": day.day, **j}  # type: ignore[call-overload]
        for j in day.journeys
    ]
    return {
        DAILY: [daily],
        HOURLY: hourly,
        BREAKDOWNS: [b for b in breakdowns if not is_goal_source(b["dimension"])],
        GOAL_SOURCES: [b for b in breakdowns if is_goal_source(b["dimension"])],
        FUNNELS: funnels,
        JOURNEYS: journeys,
    }


def load_day(db: Database, day: DayDocuments) -> dict[str, int]:
    """Replace ``day``'s documents (see the module docstring); return counts written/removed.

    ``day.breakdowns`` holds every breakdown row; the goal source rows go to their own collection."""
    scope = {"site_id": day.site_id, "day": day.day}
    written = removed = 0
    for name, docs in _with_ids(day).items():
        coll = db[name]
        for start in range(0, len(docs), BULK):
            ops = [ReplaceOne({"_id": d["_id"]}, d, upsert=True) for d in docs[start : start + BULK]]
            coll.bulk_write(ops, ordered=False)
            written += len(ops)
        keep = [d["_id"] for d in docs]
        result = coll.bulk_write([DeleteMany({**scope, "_id": {"$nin": keep}})])
        removed += result.deleted_count
    run = run_document(day)
    db[RUNS].replace_one({"_id": run["_id"]}, run, upsert=True)
    return {"written": written, "removed": removed}


def run_document(day: DayDocuments) -> dict:
    """The ``batch_runs`` document that settles ``day``: the run's facts and a ``generation``
    unique to this load, so a reader may keep what it read of the day for exactly as long as
    the day is not loaded again (the query layer's cache of settled reads keys on it)."""
    doc = {"_id": daily_id(day.site_id, day.day), "site_id": day.site_id, "day": day.day, **day.run}
    return {**doc, "generation": uuid.uuid4().hex}


def settled_days(db: Database, site: str) -> list[str]:
    """Local days of ``site`` that the batch layer has rolled up, oldest first."""
    return sorted(doc["day"] for doc in db[RUNS].find({"site_id": site}, {"day": 1}))


def watermark(db: Database, site: str) -> str | None:
    """The latest settled day of ``site`` (the query layer reads Redis after it)."""
    doc = db[RUNS].find_one({"site_id": site}, sort=[("day", DESCENDING)])
    return doc["day"] if doc else None


def legacy_hour_days(db: Database) -> dict[str, set[str]]:
    """Per site, the days still holding hour documents of the layout before buckets by instant."""
    out: dict[str, set[str]] = {}
    for doc in db[HOURLY].find({"start_ms": {"$exists": False}}, {"site_id": 1, "day": 1}):
        out.setdefault(doc["site_id"], set()).add(doc["day"])
    return out


def has_clock_change(day: str, tz: str | None) -> bool:
    """Whether the local ``day`` in ``tz`` holds a change of the zone's offset."""
    buckets = day_buckets(dt.date.fromisoformat(day), ZoneInfo(tz or "UTC"))
    return len({b.offset for b in buckets}) > 1


def record_reconciliation(db: Database, site: str, day: str, drift: Mapping[str, object]) -> None:
    db[RECONCILIATION].replace_one(
        {"_id": daily_id(site, day)}, {"_id": daily_id(site, day), "site_id": site, "day": day, **drift}, upsert=True
    )


def documents(db: Database, site: str, days: Iterable[str]) -> dict[str, list[dict]]:
    """Every rollup document of ``site`` for ``days``, sorted by ``_id`` (for comparisons)."""
    days = list(days)
    query = {"site_id": site, "day": {"$in": days}}
    return {name: sorted(db[name].find(query), key=lambda d: d["_id"]) for name in ROLLUP_COLLECTIONS}


BATCH_TIMEOUT_MS = 10_000  # a rollup waits out a replica set's election; the API does not (MONGO_TIMEOUT_MS)


def connect(
    url: str, name: str, timeout_ms: int = BATCH_TIMEOUT_MS, query_timeout_ms: int | None = None
) -> tuple[pymongo.MongoClient, Database]:
    """A client of ``url`` and its database ``name``. ``timeout_ms`` bounds finding a server and
    connecting to it. ``query_timeout_ms`` bounds waiting for an answer and makes reads one
    attempt, not retried (``socketTimeoutMS``, ``retryReads=false``): an operation on a hung
    server fails in that time, where a retry would double it (pymongo's ``timeoutMS`` retries
    until its time is up, so a stopped server would take all of it too). None: no bound and
    retried reads, as batch loads need. Options ``url`` sets itself win."""
    given = {option.lower() for option in parse_qs(urlsplit(url).query)}
    wanted = {
        "serverSelectionTimeoutMS": timeout_ms, "connectTimeoutMS": timeout_ms, "socketTimeoutMS": query_timeout_ms,
        "retryReads": None if query_timeout_ms is None else False,
    }  # fmt: skip
    timeouts = {option: ms for option, ms in wanted.items() if ms is not None and option.lower() not in given}
    client: pymongo.MongoClient = pymongo.MongoClient(url, tz_aware=True, **timeouts)
    return client, client[name]


# What the Mongo client raises when the server is away or refuses: callers that report which
# store failed test against it without importing the client themselves.
ERRORS: tuple[type[Exception], ...] = (PyMongoError,)
# Of those, the ones that mean it is away or too slow (not a refused query): its breaker opens.
UNAVAILABLE: tuple[type[Exception], ...] = (ConnectionFailure, ExecutionTimeout)


def mongo_ping(url: str, timeout_s: float) -> Ping[pymongo.MongoClient]:
    """A :class:`footfall.ping.Ping` of the Mongo-wire server at ``url``, answering within ``timeout_s``."""
    timeout_ms = int(timeout_s * 1000)
    return Ping(
        lambda: pymongo.MongoClient(url, serverSelectionTimeoutMS=timeout_ms, connect=False),
        lambda client: client.admin.command("ping"),
        ERRORS,
    )
