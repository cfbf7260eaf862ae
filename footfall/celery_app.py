"""The Celery application (Redis broker, ``CELERY_BROKER_URL``).

Run one or more workers and exactly one beat process::

    celery -A footfall.celery_app worker --loglevel INFO
    celery -A footfall.celery_app beat --loglevel INFO --schedule <dir>/celerybeat-schedule --pidfile <dir>/beat.pid

Tasks live next to the domain code they wrap (``<app>/tasks.py``) and are found by
autodiscovery; every ``CELERY_*`` Django setting configures the app, the beat schedule
included (:mod:`footfall.celery_schedule`).
"""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "footfall.settings")

app = Celery("footfall")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
