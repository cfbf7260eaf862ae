"""Django settings of the collector benchmark: Footfall's settings plus the bench URLconf.

With ``FOOTFALL_BENCH_MIDDLEWARE=1`` (server B) it also installs
:class:`~footfall_capture.middleware.ClickstreamMiddleware` as its docstring tells a host
site to (appended last, its ``FOOTFALL_*`` settings set): B differs from A in that alone.
"""

from __future__ import annotations

import os

from footfall.settings import *  # noqa: F403 - the project's settings, unchanged
from footfall.settings import FOOTFALL, MIDDLEWARE

ROOT_URLCONF = "bench.urls"

if os.environ.get("FOOTFALL_BENCH_MIDDLEWARE") == "1":
    MIDDLEWARE = [*MIDDLEWARE, "footfall_capture.middleware.ClickstreamMiddleware"]
    FOOTFALL_SITE_ID = "bench"
    FOOTFALL_KAFKA_BOOTSTRAP_SERVERS = FOOTFALL.kafka_bootstrap_servers
    FOOTFALL_REDIS_URL = FOOTFALL.redis_url
    FOOTFALL_SPOOL_DIR = str(FOOTFALL.spool_dir)
    # Defaults otherwise (page views tracked, sample rate 1): every /bench/page answer is one
    # event, so the Kafka count can be checked against the 200s wrk saw.
