"""API keys and share links expire (share links after 30 days by default), record when they
were last used, and an expired one is refused like a revoked one."""

from __future__ import annotations

import os
import sqlite3
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client, RequestFactory
from django.utils import timezone

from api.auth import verified_key
from dashboard.access import SESSION_SHARES, access_for
from dashboard.models import ShareLink
from footfall import tokens
from footfall.models import ApiKey, Site
from tests.unit.migrated_db import manage

pytestmark = pytest.mark.django_db


@pytest.fixture
def site() -> Site:
    return Site.objects.create(site_id="expiry-test", name="Expiry", domains=["example.com"])


def test_api_keys_do_not_expire_unless_told(site: Site) -> None:
    row, key = ApiKey.issue(site, "ci", ["read"])
    assert row.expires_at is None
    assert ApiKey.authenticate(key) == row


def test_expired_api_key_is_refused(site: Site) -> None:
    row, key = ApiKey.issue(site, "ci", ["read"], expires_at=timezone.now() + timedelta(hours=1))
    assert ApiKey.authenticate(key) == row
    ApiKey.objects.filter(pk=row.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert ApiKey.authenticate(key) is None


def test_a_remembered_key_is_refused_once_it_expires(site: Site) -> None:
    """The API's per-process memory of verified keys does not outlive the key's expiry."""
    row, key = ApiKey.issue(site, "ci", ["read"], expires_at=timezone.now() + timedelta(hours=1))
    cached = verified_key(key)
    assert cached == row
    assert cached is not None
    cached.expires_at = timezone.now() - timedelta(seconds=1)  # what the clock does to the remembered row
    assert verified_key(key) is None


def test_expired_key_is_refused_by_the_api(site: Site, client: Client) -> None:
    _, key = ApiKey.issue(site, "ci", ["read"], expires_at=timezone.now() - timedelta(seconds=1))
    resp = client.get(f"/api/v1/sites/{site.site_id}/aggregate", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert resp.status_code == 401
    assert "expired" in resp.content.decode()


def test_use_of_a_key_is_recorded_at_most_once_a_minute(site: Site) -> None:
    row, key = ApiKey.issue(site, "ci", ["read"])
    assert row.last_used_at is None
    ApiKey.authenticate(key)
    first = ApiKey.objects.get(pk=row.pk).last_used_at
    assert first is not None
    ApiKey.authenticate(key)
    assert ApiKey.objects.get(pk=row.pk).last_used_at == first


def test_create_api_key_command_sets_an_expiry(site: Site) -> None:
    out = StringIO()
    call_command("create_api_key", site.site_id, scope=["read"], expires_in_days=7, stdout=out)
    row = ApiKey.authenticate(out.getvalue().strip())
    assert row is not None
    assert row.expires_at is not None
    assert timedelta(days=6, hours=23) < row.expires_at - timezone.now() <= timedelta(days=7)
    with pytest.raises(CommandError, match="at least 1"):
        call_command("create_api_key", site.site_id, expires_in_days=0, stdout=StringIO())


def test_share_links_expire_after_30_days_by_default(site: Site) -> None:
    link, token = ShareLink.issue(site, "press")
    assert link.expires_at is not None
    assert timedelta(days=29, hours=23) < link.expires_at - timezone.now() <= timedelta(days=30)
    assert ShareLink.resolve(token) == link
    assert ShareLink.objects.get(pk=link.pk).last_used_at is not None
    ShareLink.objects.filter(pk=link.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert ShareLink.resolve(token) is None
    assert "expired" in str(ShareLink.objects.get(pk=link.pk))


def test_share_link_without_expiry_on_request(site: Site) -> None:
    link, token = ShareLink.issue(site, "screen", lifetime=None)
    assert link.expires_at is None
    assert ShareLink.resolve(token) == link


def test_share_link_command_expiry_options(site: Site) -> None:
    out = StringIO()
    call_command("share_link", site.site_id, expires_in_days=2, stdout=out)
    link = ShareLink.resolve(out.getvalue().strip().rsplit("/", 1)[1])
    assert link is not None
    assert link.expires_at is not None
    assert link.expires_at - timezone.now() <= timedelta(days=2)
    call_command("share_link", site.site_id, no_expiry=True, stdout=out)
    assert ShareLink.objects.filter(site=site, expires_at__isnull=True).count() == 1
    with pytest.raises(CommandError, match="at least 1"):
        call_command("share_link", site.site_id, expires_in_days=0, stdout=StringIO())


def test_share_links_from_before_expiry_get_created_plus_30_days(tmp_path: Path) -> None:
    """The migration keeps every link, expiring each 30 days after its creation."""
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "FOOTFALL_DATA_DIR": str(tmp_path)}
    manage("migrate", "-v0", env=env)
    manage("migrate", "footfall_dashboard", "0002", "-v0", env=env)  # the last state before expiry
    old, recent = tokens.issue("fs", 24), tokens.issue("fs", 24)
    with sqlite3.connect(tmp_path / "db.sqlite3") as db:
        db.execute("INSERT INTO footfall_core_site (site_id, name, domains, allowed_origins, timezone, salt_policy,"
                   " respect_dnt, drop_bots, query_params, created_at) VALUES ('s', 'S', '[]', '[]', 'UTC', 'daily',"
                   " 1, 0, '[]', '2026-01-01 00:00:00')")  # fmt: skip
        for link, created in ((old, "2026-01-01 00:00:00"), (recent, "datetime('now')")):
            value = created if created.startswith("datetime") else f"'{created}'"
            db.execute("INSERT INTO footfall_dashboard_sharelink (label, prefix, token_hash, created_at, site_id)"
                       f" VALUES ('l', ?, ?, {value}, 's')", (link.prefix, link.digest))  # fmt: skip
    manage("migrate", "-v0", env=env)
    with sqlite3.connect(tmp_path / "db.sqlite3") as db:
        rows = dict(db.execute("SELECT prefix, expires_at FROM footfall_dashboard_sharelink"))
    assert rows[old.prefix].startswith("2026-01-31 00:00:00")
    assert rows[recent.prefix] is not None


def test_a_share_link_opened_before_it_expired_stops_showing_its_site(site: Site) -> None:
    """A browser holding the link in its session loses the site once the link expires, as when revoked."""
    link, _ = ShareLink.issue(site, "press")
    request = RequestFactory().get("/dashboard/")
    request.user = AnonymousUser()
    request.session = {SESSION_SHARES: [link.pk]}  # type: ignore[assignment]
    assert [c.site_id for c in access_for(request).sites] == [site.site_id]
    ShareLink.objects.filter(pk=link.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    access = access_for(request)
    assert access.sites == ()
    assert access.shared_revoked
