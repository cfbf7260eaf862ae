"""API tests: sites and keys in the test database, requests through Django's test client
to the real query layer over the stack's Redis and Mongo-wire server."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import pytest
from django.test import Client

from footfall.models import ApiKey, Site


@dataclass
class SiteKey:
    site: Site
    key: str

    def get(self, client: Client, path: str, **params: object):
        return client.get(f"/api/v1/sites/{self.site.site_id}/{path}", params, HTTP_AUTHORIZATION=f"Bearer {self.key}")


def make_site(tz: str = "America/New_York", scopes: tuple[str, ...] = ("read",)) -> SiteKey:
    site = Site.objects.create(site_id=f"api-{uuid.uuid4().hex[:8]}", name="API test", domains=["demo.footfall.local"],
                               timezone=tz)  # fmt: skip
    _, key = ApiKey.issue(site, "test", list(scopes))
    return SiteKey(site, key)


@pytest.fixture
def site_key(db: None) -> SiteKey:
    """A key that may read and export: every GET endpoint of the site answers it."""
    return make_site(scopes=("read", "export"))


@pytest.fixture
def other_site_key(db: None) -> SiteKey:
    return make_site(tz="UTC")
