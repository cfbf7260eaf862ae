"""Alert tests: sites with keys (read, and read + manage) in the test database."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from tests.integration.api.conftest import SiteKey, make_site, other_site_key, site_key  # noqa: F401 - fixtures


@pytest.fixture
def manager(db: None) -> SiteKey:
    """A site and a key that may read and change its definitions."""
    return make_site(tz="UTC", scopes=("read", "manage"))


def send(client: Client, sk: SiteKey, method: str, path: str, body: object = None):
    """``method`` on ``/api/v1/sites/<sk's site>/<path>`` with ``sk``'s key and a JSON body."""
    data = json.dumps(body) if body is not None else ""
    return client.generic(
        method, f"/api/v1/sites/{sk.site.site_id}/{path}", data, content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {sk.key}",
    )  # fmt: skip
