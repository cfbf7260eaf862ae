"""Site and ApiKey moved from the collector app to the core app (footfall_core): a database
migrated before the move migrates forward keeping its sites, keys, grants, share links,
permissions and admin history, and the models match their migrations."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from footfall import tokens
from tests.unit.migrated_db import manage, read_back

# Rows as the apps stored them before the move (tables footfall_collector_*). The collector's
# content types are written here: today's code has no collector models to make them from.
ROWS_BEFORE_THE_MOVE = [
    "INSERT INTO django_content_type (app_label, model) VALUES ('footfall_collector', 'site'), "
    "('footfall_collector', 'apikey')",
    """INSERT INTO auth_permission (content_type_id, codename, name) SELECT id, 'view_site', 'Can view site'
        FROM django_content_type WHERE app_label = 'footfall_collector' AND model = 'site'""",
    """INSERT INTO footfall_collector_site VALUES
        ('shop', 'Shop', '["shop.example"]', '[]', 'Europe/Berlin', 'daily', 1, 0, '2026-11-22 00:00:00'),
        ('blog', 'Blog', '["blog.example"]', '[]', 'UTC', 'daily_site_tz', 0, 1, '2026-11-22 00:00:00')""",
    """INSERT INTO footfall_collector_apikey (name, prefix, key_hash, scopes, created_at, site_id)
        VALUES ('reader', :key_prefix, :key_hash, '["read"]', '2026-11-22 00:00:00', 'shop')""",
    """INSERT INTO auth_user (password, is_superuser, username, first_name, last_name, email, is_staff, is_active,
        date_joined) VALUES ('!', 0, 'alice', '', '', '', 0, 1, '2026-11-22 00:00:00')""",
    """INSERT INTO auth_user_user_permissions (user_id, permission_id) SELECT 1, p.id FROM auth_permission p
        JOIN django_content_type t ON t.id = p.content_type_id
        WHERE t.app_label = 'footfall_collector' AND p.codename = 'view_site'""",
    """INSERT INTO footfall_dashboard_siteaccess (granted_at, site_id, user_id)
        VALUES ('2026-11-22 00:00:00', 'shop', 1)""",
    """INSERT INTO footfall_dashboard_sharelink (label, prefix, token_hash, created_at, created_by_id, site_id)
        VALUES ('screen', :link_prefix, :link_hash, datetime('now'), 1, 'shop')""",  # live: links expire after 30 days
    """INSERT INTO django_admin_log (action_time, object_id, object_repr, action_flag, change_message,
        content_type_id, user_id) SELECT '2026-11-22 00:00:00', 'shop', 'shop', 2, '[]', id, 1
        FROM django_content_type WHERE app_label = 'footfall_collector' AND model = 'site'""",
]


def test_database_from_before_the_move_migrates_keeping_its_rows(tmp_path: Path) -> None:
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "FOOTFALL_DATA_DIR": str(tmp_path)}
    for app in ("auth", "admin", "sessions"):
        manage("migrate", app, "-v0", env=env)
    manage("migrate", "footfall_dashboard", "0001", "-v0", env=env)  # the last state before the move
    key, link = tokens.issue("ff", 32), tokens.issue("fs", 24)
    with sqlite3.connect(tmp_path / "db.sqlite3") as db:
        for statement in ROWS_BEFORE_THE_MOVE:
            db.execute(statement, {"key_prefix": key.prefix, "key_hash": key.digest,
                                   "link_prefix": link.prefix, "link_hash": link.digest})  # fmt: skip

    manage("migrate", "-v0", env=env)

    found = read_back(key.token, link.token, env=env)
    assert found["sites"] == ["blog", "shop"]
    assert found["key_site"] == "shop"
    assert found["link_site"] == "shop"
    assert found["grants"] == [["alice", "shop"]]
    assert found["permission"] is True
    assert found["history"] == [["footfall_core", "site", "shop"]]
    assert {"footfall_core_site", "footfall_core_apikey"} <= set(found["tables"])
    assert not [t for t in found["tables"] if t.startswith("footfall_collector_")]
    assert found["broken_foreign_keys"] == []


def test_models_match_their_migrations(tmp_path: Path) -> None:
    """``makemigrations --check`` fails when a model changed without a migration."""
    manage(
        "makemigrations",
        "--check",
        "--dry-run",
        env={**os.environ, "FOOTFALL_DATA_DIR": str(tmp_path), "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"},
    )
