"""The Celery application (Redis broker). Start a worker with ``celery -A footfall.celery_app worker``.

Tasks live next to the domain code they wrap and are found by autodiscovery; the beat
schedule is declared in one module once there are scheduled tasks.
"""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "footfall.settings")

app = Celery("footfall")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
