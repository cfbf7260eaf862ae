"""A database migrated under the old app labels (collector, dashboard, ...) migrates to the
footfall_* labels keeping its sites, API keys, grants, share links and permissions."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from footfall import tokens

REPO = Path(__file__).resolve().parents[2]

# The tables as the old labels made them, and rows in them (statements end with ";\n").
LEGACY_SQL = Path(__file__).with_name("legacy_labels.sql")

READ_BACK = """
import json
from django.contrib.auth import get_user_model
from django.db import connection
from collector.models import ApiKey, Site
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
    "permission": get_user_model().objects.get(username="alice").has_perm("footfall_collector.view_site"),
    "tables": sorted(connection.introspection.table_names()),
    "broken_foreign_keys": broken,
}}))
"""


def manage(*args: str, env: dict[str, str]) -> str:
    proc = subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_old_label_database_migrates_keeping_its_rows(tmp_path: Path) -> None:
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'old.sqlite3'}", "FOOTFALL_DATA_DIR": str(tmp_path)}
    manage("migrate", "--skip-checks", "-v0", env={**env, "DJANGO_SETTINGS_MODULE": "tests.unit.legacy_settings"})
    key, link = tokens.issue("ff", 32), tokens.issue("fs", 24)
    with sqlite3.connect(tmp_path / "old.sqlite3") as db:
        for statement in LEGACY_SQL.read_text().split(";\n"):
            db.execute(statement, {"key_prefix": key.prefix, "key_hash": key.digest,
                                   "link_prefix": link.prefix, "link_hash": link.digest})  # fmt: skip

    manage("migrate", "-v0", env={**env, "DJANGO_SETTINGS_MODULE": "footfall.settings"})

    found = json.loads(manage("shell", "-v0", "-c", READ_BACK.format(key=key.token, token=link.token), env=env))
    assert found["sites"] == ["old-site"]
    assert found["key_site"] == "old-site"
    assert found["link_site"] == "old-site"
    assert found["grants"] == [["alice", "old-site"]]
    assert found["permission"] is True
    assert not [t for t in found["tables"] if t.startswith(("collector_", "dashboard_"))]
    assert found["broken_foreign_keys"] == []
