"""Per-process singletons of the collector, created on first use (after any fork)."""

from __future__ import annotations

import os
import threading
from functools import cache
from pathlib import Path

from django.conf import settings

from collector.ingest import Ingestor
from footfall.config import Config, load_config
from footfall_capture.sink import COLLECTOR_PRODUCER, KafkaSink
from footfall_capture.spool import Spool

_lock = threading.Lock()
_ingestor: Ingestor | None = None
_sink: KafkaSink | None = None
_sink_lock = threading.Lock()  # apart from _lock: get_ingestor asks for the sink while holding that


@cache
def footfall_config() -> Config:
    """Footfall's own settings object, or the same configuration read from the environment
    when the settings module did not build one."""
    cfg = getattr(settings, "FOOTFALL", None)
    if isinstance(cfg, Config):
        return cfg
    return load_config(os.environ, Path(getattr(settings, "BASE_DIR", Path.cwd())))


def get_ingestor() -> Ingestor:
    global _ingestor
    if _ingestor is None:
        with _lock:
            if _ingestor is None:
                cfg = footfall_config()
                _ingestor = Ingestor(cfg, get_sink(cfg))
    return _ingestor


def get_sink(cfg: Config) -> KafkaSink:
    """The process's sink (its producer is created lazily, after any fork)."""
    global _sink
    if _sink is None:
        with _sink_lock:
            if _sink is None:
                _sink = KafkaSink(cfg.kafka, Spool(cfg.spool_dir, cfg.spool_max_bytes), **COLLECTOR_PRODUCER)
    return _sink
