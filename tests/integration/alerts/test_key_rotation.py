"""Rotating SECRET_KEY: with the old key in SECRET_KEY_FALLBACKS, an unsubscribe link emailed
before the rotation keeps working; without it, it does not."""

from __future__ import annotations

import uuid

import pytest
from django.test import Client, override_settings

from alerts.models import ReportSubscription
from alerts.report_mail import unsubscribe_token
from footfall.config import load_config
from footfall.models import Site

OLD, NEW = "old-" + "o" * 60, "new-" + "n" * 60


@pytest.mark.django_db
def test_links_signed_with_the_old_key_survive_its_rotation() -> None:
    site = Site.objects.create(site_id=f"kr-{uuid.uuid4().hex[:8]}", name="Rotation")
    subscription = ReportSubscription.objects.create(site=site, email="ann@example.com", frequency="weekly")
    with override_settings(SECRET_KEY=OLD):
        link = f"/alerts/unsubscribe/{unsubscribe_token(subscription)}"
    with override_settings(SECRET_KEY=NEW, SECRET_KEY_FALLBACKS=[OLD]):
        assert Client().get(link).status_code == 200
    with override_settings(SECRET_KEY=NEW, SECRET_KEY_FALLBACKS=[]):
        assert Client().get(link).status_code == 400  # rotated without the fallback: broken
    with override_settings(SECRET_KEY=NEW, SECRET_KEY_FALLBACKS=[OLD]):
        assert Client().post(link).status_code == 200
        subscription.refresh_from_db()
        assert subscription.unsubscribed_at is not None


def test_fallbacks_are_read_from_the_environment_and_checked() -> None:
    env = {"FOOTFALL_ENV": "production", "SECRET_KEY": NEW, "ALLOWED_HOSTS": "stats.example.com",
           "FOOTFALL_TRUSTED_PROXIES": "1",
           "SECRET_KEY_FALLBACKS": f"{OLD}, {'p' * 60}"}  # fmt: skip
    assert load_config(env, None).secret_key_fallbacks == (OLD, "p" * 60)
    with pytest.raises(ValueError, match="SECRET_KEY_FALLBACKS"):
        load_config({**env, "SECRET_KEY_FALLBACKS": "short"}, None)
