"""The query service, its conversion reports and the pipeline health reader of this
process, from Footfall's configuration (created on first use)."""

from __future__ import annotations

from functools import cache

from footfall.config import footfall_config
from historical.reads import RollupReads
from historical.store import connect
from query.conversions import Conversions
from query.health import HealthChecks, PipelineHealth
from query.service import QueryService
from query.settled_cache import SettledCache
from realtime.reads import RealtimeQueries
from realtime.runtime import get_store


@cache
def get_rollups() -> RollupReads:
    cfg = footfall_config()
    _, db = connect(cfg.mongo_url, cfg.mongo_db)
    return RollupReads(db)


@cache
def get_service() -> QueryService:
    cfg = footfall_config()
    cache = SettledCache(cfg.api_cache_items) if cfg.api_cache_items else None
    return QueryService(get_rollups(), RealtimeQueries(get_store()), cfg.realtime_retention_s, cache=cache)


@cache
def get_conversions() -> Conversions:
    return Conversions(get_service())


@cache
def get_health() -> PipelineHealth:
    return PipelineHealth(footfall_config(), get_store(), get_rollups())


@cache
def get_health_checks() -> HealthChecks:
    return HealthChecks(footfall_config())
