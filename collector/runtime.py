"""Per-process singletons of the collector, created on first use (after any fork)."""

from __future__ import annotations

import threading

from collector.ingest import Ingestor
from footfall.config import Config, footfall_config
from footfall_capture.sink import COLLECTOR_PRODUCER, KafkaSink
from footfall_capture.spool import Spool

_lock = threading.Lock()
_ingestor: Ingestor | None = None
_sink: KafkaSink | None = None
_sink_lock = threading.Lock()  # apart from _lock: get_ingestor asks for the sink while holding that


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
