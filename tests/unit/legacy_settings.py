"""Footfall's settings without its own apps: Django's tables only, for building a database as
it stood before the apps had ``footfall_`` labels (tests/unit/test_legacy_labels.py)."""

from footfall_server.settings import *  # noqa: F403

INSTALLED_APPS = [app for app in INSTALLED_APPS if app.startswith("django.")]  # noqa: F405
