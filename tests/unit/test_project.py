"""The project package wires the server: its Celery app is the one the apps below it send through."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# What a web process does: load the settings, then send from a request thread (alerts.notify).
WEB_PROCESS = """
import threading
import django
import celery
django.setup()
seen = []
thread = threading.Thread(target=lambda: seen.append(celery.current_app.main))
thread.start()
thread.join()
print(seen[0])
"""


def test_a_process_that_loads_the_settings_sends_through_footfalls_celery_app() -> None:
    """A fresh process (not this one, whose test modules import the app anyway)."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "footfall_server.settings", "FOOTFALL_ENV": "local"}
    out = subprocess.run([sys.executable, "-c", WEB_PROCESS], cwd=REPO, env=env, capture_output=True, text=True,
                         check=True, timeout=60)  # fmt: skip
    assert out.stdout.strip() == "footfall"
