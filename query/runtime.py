"""The query service, its conversion reports and the pipeline health reader of this
process, from Footfall's configuration (created on first use)."""

from __future__ import annotations

from functools import cache
from typing import cast

from footfall.breaker import Guarded
from footfall.config import footfall_config
from historical import store as mongo
from historical.imported import Imports
from historical.reads import RollupReads
from historical.store import connect
from query.conversions import Conversions
from query.health import BREAKERS, HealthChecks, PipelineHealth
from query.journeys import Journeys
from query.service import QueryService
from query.settled_cache import SettledCache
from realtime import store as counters
from realtime.reads import RealtimeQueries
from realtime.runtime import get_store


@cache
def _mongo_readers() -> tuple[RollupReads, Imports]:
    """The rollups' and the imports' readers over this process's one MongoDB client, failing
    fast: they share its connection pool and monitor threads."""
    cfg = footfall_config()
    _, db = connect(cfg.mongo_url, cfg.mongo_db, cfg.mongo_timeout_ms, cfg.mongo_query_timeout_ms)
    return RollupReads(db), Imports(db)


@cache
def get_rollups() -> RollupReads:
    return cast(RollupReads, Guarded(_mongo_readers()[0], "mongo", BREAKERS["mongo"], mongo.UNAVAILABLE))


@cache
def get_imports() -> Imports:
    return cast(Imports, Guarded(_mongo_readers()[1], "mongo", BREAKERS["mongo"], mongo.UNAVAILABLE))


@cache
def get_service() -> QueryService:
    cfg = footfall_config()
    cache = SettledCache(cfg.api_cache_items) if cfg.api_cache_items else None
    recent = Guarded(RealtimeQueries(get_store()), "redis", BREAKERS["redis"], counters.UNAVAILABLE)
    return QueryService(
        get_rollups(), cast(RealtimeQueries, recent), cfg.realtime_retention_s, cache=cache, imported=get_imports()
    )


@cache
def get_conversions() -> Conversions:
    return Conversions(get_service())


@cache
def get_journeys() -> Journeys:
    return Journeys(get_service())


@cache
def get_health() -> PipelineHealth:
    return PipelineHealth(footfall_config(), get_store(), get_rollups())


@cache
def get_health_checks() -> HealthChecks:
    return HealthChecks(footfall_config())
