"""The Celery application (Redis broker, ``CELERY_BROKER_URL``).

Run one or more workers and exactly one beat process::

    celery -A footfall_server.celery_app worker --loglevel INFO
    celery -A footfall_server.celery_app beat --loglevel INFO \
        --schedule <dir>/celerybeat-schedule --pidfile <dir>/beat.pid

Tasks live next to the domain code they wrap (``<app>/tasks.py``) and are found by
autodiscovery; every ``CELERY_*`` Django setting configures the app, the beat schedule
included (:mod:`footfall_server.celery_schedule`).
"""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "footfall_server.settings")

# With DJANGO_SETTINGS_MODULE set, Celery's Django fix-up makes this the default app of every
# thread, so the apps send tasks through ``celery.current_app`` (footfall_server/__init__.py).
app = Celery("footfall")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
