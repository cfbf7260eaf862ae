-- A Footfall database as migrated before the apps had footfall_ labels: the tables are
-- `manage.py sqlmigrate collector 0001` and `... dashboard 0001` on SQLite, verbatim, then a
-- row of each kind (:key_prefix and friends are bound by tests/unit/test_legacy_labels.py).
CREATE TABLE "collector_site" ("site_id" varchar(64) NOT NULL PRIMARY KEY, "name" varchar(200) NOT NULL, "domains" text NOT NULL CHECK ((JSON_VALID("domains") OR "domains" IS NULL)), "allowed_origins" text NOT NULL CHECK ((JSON_VALID("allowed_origins") OR "allowed_origins" IS NULL)), "timezone" varchar(64) NOT NULL, "salt_policy" varchar(20) NOT NULL, "respect_dnt" bool NOT NULL, "drop_bots" bool NOT NULL, "created_at" datetime NOT NULL);
CREATE TABLE "collector_apikey" ("id" integer NOT NULL PRIMARY KEY AUTOINCREMENT, "name" varchar(100) NOT NULL, "prefix" varchar(16) NOT NULL UNIQUE, "key_hash" varchar(64) NOT NULL, "scopes" text NOT NULL CHECK ((JSON_VALID("scopes") OR "scopes" IS NULL)), "created_at" datetime NOT NULL, "revoked_at" datetime NULL, "site_id" varchar(64) NOT NULL REFERENCES "collector_site" ("site_id") DEFERRABLE INITIALLY DEFERRED);
CREATE INDEX "collector_apikey_site_id_c8977687" ON "collector_apikey" ("site_id");
CREATE TABLE "dashboard_sharelink" ("id" integer NOT NULL PRIMARY KEY AUTOINCREMENT, "label" varchar(100) NOT NULL, "prefix" varchar(16) NOT NULL UNIQUE, "token_hash" varchar(64) NOT NULL, "created_at" datetime NOT NULL, "revoked_at" datetime NULL, "created_by_id" integer NULL REFERENCES "auth_user" ("id") DEFERRABLE INITIALLY DEFERRED, "site_id" varchar(64) NOT NULL REFERENCES "collector_site" ("site_id") DEFERRABLE INITIALLY DEFERRED);
CREATE TABLE "dashboard_siteaccess" ("id" integer NOT NULL PRIMARY KEY AUTOINCREMENT, "granted_at" datetime NOT NULL, "site_id" varchar(64) NOT NULL REFERENCES "collector_site" ("site_id") DEFERRABLE INITIALLY DEFERRED, "user_id" integer NOT NULL REFERENCES "auth_user" ("id") DEFERRABLE INITIALLY DEFERRED, CONSTRAINT "dashboard_siteaccess_unique" UNIQUE ("user_id", "site_id"));
CREATE INDEX "dashboard_sharelink_created_by_id_c26a945c" ON "dashboard_sharelink" ("created_by_id");
CREATE INDEX "dashboard_sharelink_site_id_8c7a3bb2" ON "dashboard_sharelink" ("site_id");
CREATE INDEX "dashboard_siteaccess_site_id_e9e32fc9" ON "dashboard_siteaccess" ("site_id");
CREATE INDEX "dashboard_siteaccess_user_id_071b0b06" ON "dashboard_siteaccess" ("user_id");
INSERT INTO django_migrations (app, name, applied) VALUES
    ('collector', '0001_initial', '2026-11-22 00:00:00'), ('dashboard', '0001_initial', '2026-11-22 00:00:00');
INSERT INTO django_content_type (app_label, model) VALUES
    ('collector', 'site'), ('collector', 'apikey'), ('dashboard', 'sharelink'), ('dashboard', 'siteaccess');
INSERT INTO auth_permission (content_type_id, codename, name)
    SELECT id, 'view_site', 'Can view site' FROM django_content_type WHERE app_label = 'collector' AND model = 'site';
INSERT INTO auth_user (password, is_superuser, username, first_name, last_name, email, is_staff, is_active, date_joined)
    VALUES ('!', 0, 'alice', '', '', '', 0, 1, '2026-11-22 00:00:00');
INSERT INTO auth_user_user_permissions (user_id, permission_id) SELECT 1, id FROM auth_permission WHERE codename = 'view_site';
INSERT INTO collector_site VALUES ('old-site', 'Old site', '["old.example"]', '[]', 'UTC', 'daily', 1, 0, '2026-11-22 00:00:00');
INSERT INTO collector_apikey (name, prefix, key_hash, scopes, created_at, site_id)
    VALUES ('reader', :key_prefix, :key_hash, '["read"]', '2026-11-22 00:00:00', 'old-site');
INSERT INTO dashboard_sharelink (label, prefix, token_hash, created_at, created_by_id, site_id)
    VALUES ('screen', :link_prefix, :link_hash, datetime('now'), 1, 'old-site');
INSERT INTO dashboard_siteaccess (granted_at, site_id, user_id) VALUES ('2026-11-22 00:00:00', 'old-site', 1);
