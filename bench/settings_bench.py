"""Django settings of the collector benchmark: Footfall's own settings plus the bench URLconf.

Variant A is Footfall's settings as they are; variant B (``FOOTFALL_BENCH_MIDDLEWARE=1``)
also installs :class:`~footfall_capture.middleware.ClickstreamMiddleware` exactly as its docstring
tells a host site to (appended last, its ``FOOTFALL_*`` settings set), so B differs from the
bench's other servers in that one respect. ``FOOTFALL_BENCH_BEACON_MIDDLEWARE=1`` (``collector_bench
--beacon-middleware``) installs :class:`~collector.middleware.BeaconMiddleware` in every server,
right after SecurityMiddleware as its docstring says, when Footfall's settings do not
already: it measures that setting before the project adopts it. The harness
(``bench/harness.py``) sets the environment; nothing else should use this module.
"""

from __future__ import annotations

import os

from footfall.settings import *  # noqa: F403 - the project's settings, unchanged
from footfall.settings import FOOTFALL, MIDDLEWARE

ROOT_URLCONF = "bench.urls"

BEACON_MIDDLEWARE = "collector.middleware.BeaconMiddleware"
if os.environ.get("FOOTFALL_BENCH_BEACON_MIDDLEWARE") == "1" and BEACON_MIDDLEWARE not in MIDDLEWARE:
    _security = MIDDLEWARE.index("django.middleware.security.SecurityMiddleware") + 1
    MIDDLEWARE = [*MIDDLEWARE[:_security], BEACON_MIDDLEWARE, *MIDDLEWARE[_security:]]

if os.environ.get("FOOTFALL_BENCH_MIDDLEWARE") == "1":
    MIDDLEWARE = [*MIDDLEWARE, "footfall_capture.middleware.ClickstreamMiddleware"]
    FOOTFALL_SITE_ID = os.environ.get("FOOTFALL_BENCH_SITE", "bench")
    FOOTFALL_KAFKA_BOOTSTRAP_SERVERS = FOOTFALL.kafka_bootstrap_servers
    FOOTFALL_REDIS_URL = FOOTFALL.redis_url
    FOOTFALL_SPOOL_DIR = str(FOOTFALL.spool_dir)
    # Defaults otherwise ("pageviews" tracking, sample rate 1): every /bench/page answer is
    # one event, so the Kafka count can be checked against the 200s wrk saw.
