"""Helpers of the tests that migrate an existing database forward in a subprocess (its own
SQLite file and settings) and read back what survived."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

READ_BACK = """
import json
from django.contrib.admin.models import LogEntry
from django.contrib.auth import get_user_model
from django.db import connection
from footfall.models import ApiKey, Site
from dashboard.models import ShareLink, SiteAccess
key, link = ApiKey.authenticate({key!r}), ShareLink.resolve({token!r})
with connection.cursor() as cursor:
    cursor.execute("PRAGMA foreign_key_check")
    broken = cursor.fetchall()
print(json.dumps({{
    "sites": list(Site.objects.values_list("site_id", flat=True)),
    "key_site": key and key.site_id,
    "link_site": link and link.site_id,
    "grants": [(a.user.username, a.site_id) for a in SiteAccess.objects.all()],
    "permission": get_user_model().objects.get(username="alice").has_perm("footfall_core.view_site"),
    "history": [(e.content_type.app_label, e.content_type.model, e.object_id) for e in LogEntry.objects.all()],
    "tables": sorted(connection.introspection.table_names()),
    "broken_foreign_keys": broken,
}}))
"""


def manage(*args: str, env: dict[str, str]) -> str:
    """Run ``manage.py`` with ``args`` in ``env``; its standard output."""
    proc = subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def read_back(key: str, token: str, env: dict[str, str]) -> dict:
    """What the current models see of the database: sites, the site of API key ``key`` and of
    share link ``token``, grants, alice's permission to view sites, admin history, tables."""
    return json.loads(manage("shell", "-v0", "-c", READ_BACK.format(key=key, token=token), env=env))
