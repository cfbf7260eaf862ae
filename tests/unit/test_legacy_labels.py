"""A database migrated under the old app labels (collector, dashboard, ...) migrates to the
footfall_* labels keeping its sites, API keys, grants, share links and permissions."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from footfall import tokens
from tests.unit.migrated_db import manage, read_back

# The tables as the old labels made them, and rows in them (statements end with ";\n").
LEGACY_SQL = Path(__file__).with_name("legacy_labels.sql")


def test_old_label_database_migrates_keeping_its_rows(tmp_path: Path) -> None:
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'old.sqlite3'}", "FOOTFALL_DATA_DIR": str(tmp_path)}
    manage("migrate", "--skip-checks", "-v0", env={**env, "DJANGO_SETTINGS_MODULE": "tests.unit.legacy_settings"})
    key, link = tokens.issue("ff", 32), tokens.issue("fs", 24)
    with sqlite3.connect(tmp_path / "old.sqlite3") as db:
        for statement in LEGACY_SQL.read_text().split(";\n"):
            db.execute(statement, {"key_prefix": key.prefix, "key_hash": key.digest,
                                   "link_prefix": link.prefix, "link_hash": link.digest})  # fmt: skip

    manage("migrate", "-v0", env={**env, "DJANGO_SETTINGS_MODULE": "footfall_server.settings"})

    found = read_back(key.token, link.token, env=env)
    assert found["sites"] == ["old-site"]
    assert found["key_site"] == "old-site"
    assert found["link_site"] == "old-site"
    assert found["grants"] == [["alice", "old-site"]]
    assert found["permission"] is True
    assert not [t for t in found["tables"] if t.startswith(("collector_", "dashboard_"))]
    assert {"footfall_core_site", "footfall_core_apikey"} <= set(found["tables"])
    assert found["broken_foreign_keys"] == []
