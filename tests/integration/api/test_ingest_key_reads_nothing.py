"""A site ingest key (what a host site holds) sends events and reads its site's salts, nothing
else: every per-site endpoint of the API refuses it for every method, and so do the dashboard
and the alerts pages."""

from __future__ import annotations

import uuid

import pytest
from django.test import Client
from django.urls import URLPattern, reverse

from api import urls as api_urls
from collector.runtime import get_ingestor
from footfall.models import ApiKey, Site

ARGUMENTS = {"dimension": "pages", "ref_domain": "google.com", "page_path": "/", "event": "signup", "prop": "plan",
             "goal_id": 1, "funnel_id": 1, "rule_id": 1, "channel_id": 1, "subscription_id": 1,
             "import_id": "0123456789ab"}  # fmt: skip


def site_endpoints(site_id: str) -> list[str]:
    """Every per-site route of the API, its parameters filled in."""
    found = []
    for pattern in api_urls.urlpatterns:
        assert isinstance(pattern, URLPattern)
        names = set(pattern.pattern.regex.groupindex)
        if "site_id" in names:
            kwargs = {"site_id": site_id, **{name: ARGUMENTS[name] for name in names - {"site_id"}}}
            found.append(reverse(f"api:{pattern.name}", kwargs=kwargs))
    return found


@pytest.mark.django_db
def test_an_ingest_key_is_refused_by_every_read_and_write_of_the_api() -> None:
    site = Site.objects.create(site_id=f"ik-{uuid.uuid4().hex[:8]}", name="Host", domains=["example.com"])
    get_ingestor().sites.invalidate()
    _, key = ApiKey.issue(site, "host", ["ingest"])
    client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
    endpoints = site_endpoints(site.site_id)
    assert len(endpoints) >= 18, endpoints  # the route list was read, not skipped
    answers = {}
    for url in endpoints:
        for method in ("get", "post", "put", "patch", "delete"):
            body = {} if method == "get" else {"data": "{}", "content_type": "application/json"}
            response = getattr(client, method)(url, **body)
            answers[(method, url)] = response.status_code
    allowed = {what: status for what, status in answers.items() if status < 400}
    assert not allowed, allowed
    # Every route that exists for the method refuses the key for its scope, before anything else.
    assert set(answers.values()) <= {403, 405}, answers
    assert 403 in answers.values()
    # Its own job still works: the salts of its site.
    assert client.get(f"/api/v1/sites/{site.site_id}/salts").status_code == 200
    for page in ("/dashboard/", f"/dashboard/sites/{site.site_id}/", "/alerts/"):
        response = client.get(page)
        assert response.status_code in (302, 401, 403, 404), (page, response.status_code)
        assert site.site_id.encode() not in response.content or response.status_code == 302
