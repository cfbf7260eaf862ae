"""Per-process singletons of the collector, created on first use (after any fork)."""

from __future__ import annotations

import os
import threading
from functools import cache
from pathlib import Path

from django.conf import settings

from collector.ingest import Ingestor
from collector.sink import get_sink
from footfall.config import Config, load_config

_lock = threading.Lock()
_ingestor: Ingestor | None = None


@cache
def footfall_config() -> Config:
    """Footfall's own settings object, or — in a host project that only installed the
    collector — the same configuration read from the environment."""
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
