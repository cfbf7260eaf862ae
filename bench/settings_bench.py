"""Django settings of the collector benchmark: Footfall's plus the bench URLconf, and with
``FOOTFALL_BENCH_MIDDLEWARE=1`` (server B) ClickstreamMiddleware installed as a host site does."""

from __future__ import annotations

import os

from footfall_server.settings import *  # noqa: F403 - the project's settings, unchanged
from footfall_server.settings import FOOTFALL, MIDDLEWARE

ROOT_URLCONF = "bench.urls"

if os.environ.get("FOOTFALL_BENCH_MIDDLEWARE") == "1":
    MIDDLEWARE = [*MIDDLEWARE, "footfall_capture.middleware.ClickstreamMiddleware"]
    FOOTFALL_SITE_ID = "bench"
    FOOTFALL_KAFKA_BOOTSTRAP_SERVERS = FOOTFALL.kafka_bootstrap_servers
    FOOTFALL_REDIS_URL = FOOTFALL.redis_url
    FOOTFALL_SPOOL_DIR = str(FOOTFALL.spool_dir)  # defaults otherwise: each /bench/page 200 is one event
