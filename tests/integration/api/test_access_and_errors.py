"""Auth, isolation, rate limits and parameter errors, on every endpoint of the generated schema."""

from __future__ import annotations

import dataclasses
import json
import time

import pytest
from django.test import Client
from django.utils import timezone
from drf_spectacular.generators import SchemaGenerator

import api.auth
from api.errors import INTERNAL_ERROR
from footfall.config import Config
from footfall.models import ApiKey
from historical.store import BREAKDOWNS, RUNS, connect
from query.runtime import get_service
from tests.integration.api.conftest import SiteKey, make_site

FILL = {
    "dimension": "pages",
    "ref_domain": "news.ycombinator.com",
    "page_path": "pricing",
    "event": "signup",
    "prop": "plan",
}
# Parameters an endpoint cannot answer without (every call sends them; a test may override them).
REQUIRED = {"sites/{site_id}/journeys": {"start": "/pricing"}}
INJECTIONS = ['{"$gt": ""}', "$where", "this.a == 1", "a.b", "$ne", "';return true;//", "\x00", "../../x", "%24gt"]


def site_paths() -> list[str]:
    """Every per-site GET endpoint of the OpenAPI schema, with ``{site_id}`` left to fill."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    # A funnel's report or an alert rule needs one of the site: their access is tested in
    # test_goals_api and tests/integration/alerts.
    paths = [
        p for p, ops in schema["paths"].items()
        if "{site_id}" in p and "get" in ops and "{funnel_id}" not in p and "{rule_id}" not in p
    ]  # fmt: skip
    assert len(paths) >= 6, paths
    return [path.format_map({**FILL, "site_id": "{site_id}"}).removeprefix("/api/v1/") for path in paths]


def call(client: Client, path: str, site_id: str, key: str | None, /, **params: object):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {key}"} if key else {}
    params = REQUIRED.get(path, {}) | params
    return client.get("/api/v1/" + path.replace("{site_id}", site_id), params, **headers)


@pytest.mark.django_db
def test_every_endpoint_refuses_other_sites_missing_and_wrong_keys(site_key: SiteKey, other_site_key: SiteKey) -> None:
    client = Client()
    ingest_only = make_site(scopes=("ingest",))
    revoked = make_site()
    revoked.site.api_keys.get().revoke()
    for path in site_paths():
        mine = call(client, path, site_key.site.site_id, site_key.key)
        assert mine.status_code == 200, (path, mine.content)
        # Another site's key, on this site: 404, as for a site that does not exist.
        other = call(client, path, site_key.site.site_id, other_site_key.key)
        assert other.status_code == 404, path
        assert call(client, path, "no-such-site", site_key.key).status_code == 404, path
        missing = call(client, path, site_key.site.site_id, None)
        assert missing.status_code == 401, path
        assert missing["WWW-Authenticate"].startswith("Bearer"), path
        assert call(client, path, site_key.site.site_id, "ff_000000000000_forged").status_code == 401, path
        assert call(client, path, revoked.site.site_id, revoked.key).status_code == 401, path
        no_read = call(client, path, ingest_only.site.site_id, ingest_only.key)
        assert no_read.status_code == 403, path
        assert set(no_read.json()) == {"error"}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("path", "params", "parameter"),
    [
        ("timeseries", {"metric": "revenue"}, "metric"),
        ("timeseries", {"interval": "week"}, "interval"),
        ("timeseries", {"from": "2026-11-02", "to": "2026-11-01"}, "to"),
        ("timeseries", {"interval": "minute", "from": "2026-01-01", "to": "2026-02-01"}, "from"),
        ("timeseries", {"tz": "Nowhere/Atlantis"}, "tz"),
        ("timeseries", {"filters": "colour==red"}, "filters"),
        ("breakdown/planets", {}, "dimension"),
        ("breakdown/pages", {"limit": "0"}, "limit"),
        ("breakdown/pages", {"page": "-2"}, "page"),
        ("breakdown/pages", {"metrics": "pageviews,money"}, "metrics"),
        ("breakdown/pages", {"from": "2019-01-01"}, "from"),
        ("realtime", {"minutes": "10000"}, "minutes"),
        ("aggregate", {"compare": "last_year"}, "compare"),
    ],
)
def test_bad_parameters_get_400_naming_them(site_key: SiteKey, path: str, params: dict, parameter: str) -> None:
    response = site_key.get(Client(), path, **params)
    assert response.status_code == 400
    assert response.json()["error"]["parameter"] == parameter


@pytest.mark.django_db
def test_operator_injection_in_every_parameter_does_nothing(
    cfg: Config, site_key: SiteKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("api.auth.footfall_config", lambda: dataclasses.replace(cfg, api_rate_per_minute=100_000))
    client = Client()
    _, db = connect(cfg.mongo_url, cfg.mongo_db)
    before = (db[BREAKDOWNS].estimated_document_count(), db[RUNS].estimated_document_count())
    names = ["metric", "interval", "from", "to", "tz", "filters", "limit", "page", "metrics", "minutes", "compare",
             "start", "path", "direction"]  # fmt: skip
    for path in site_paths():
        for payload in INJECTIONS:
            for name in names:
                response = call(client, path, site_key.site.site_id, site_key.key, **{name: payload})
                assert response.status_code in (200, 400), (path, name, payload, response.status_code)
            for value in ("pages==" + payload, "referrers==" + payload):
                response = call(client, path, site_key.site.site_id, site_key.key, filters=value)
                assert response.status_code in (200, 400)
        # Bracketed names (PHP/Express-style operator smuggling) are just unknown parameters.
        response = call(client, path, site_key.site.site_id, site_key.key, **{"limit[$gt]": "0", "from[$ne]": "1"})
        assert response.status_code == 200
    for payload in INJECTIONS:
        for tail in (f"breakdown/{payload}", f"referrers/{payload}/pages", f"pages/{payload}/referrers"):
            path = "sites/{site_id}/" + tail
            response = call(client, path, site_key.site.site_id, site_key.key)
            assert response.status_code in (200, 400, 404), (path, response.status_code)
    assert (db[BREAKDOWNS].estimated_document_count(), db[RUNS].estimated_document_count()) == before


@pytest.mark.django_db
def test_a_revoked_key_is_refused_at_once_here_and_within_the_key_memory_elsewhere(
    site_key: SiteKey, other_site_key: SiteKey
) -> None:
    client = Client()
    assert site_key.get(client, "aggregate").status_code == 200  # now remembered as verified
    site_key.site.api_keys.get().revoke()  # in this process: the memory is dropped at once
    assert site_key.get(client, "aggregate").status_code == 401

    assert other_site_key.get(client, "aggregate").status_code == 200
    # Revoked by another process: no signal here, so the remembered key serves until it expires.
    ApiKey.objects.filter(site=other_site_key.site).update(revoked_at=timezone.now())
    assert other_site_key.get(client, "aggregate").status_code == 200
    api.auth._verified.expire(time.monotonic() + api.auth.KEY_CACHE_TTL_S + 0.1)
    assert other_site_key.get(client, "aggregate").status_code == 401


@pytest.mark.django_db
def test_rate_limit_per_key_answers_429_with_retry_after(
    cfg: Config, site_key: SiteKey, other_site_key: SiteKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("api.auth.footfall_config", lambda: dataclasses.replace(cfg, api_rate_per_minute=3))
    client = Client()
    statuses = [site_key.get(client, "aggregate").status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    limited = site_key.get(client, "aggregate")
    assert limited.status_code == 429
    assert 0 < int(limited["Retry-After"]) <= 60
    assert "error" in json.loads(limited.content)
    # The budget is per key: another key is unaffected.
    assert other_site_key.get(client, "aggregate").status_code == 200


@pytest.mark.django_db
def test_csv_export_and_formula_guard(site_key: SiteKey) -> None:
    client = Client()
    response = site_key.get(client, "timeseries", format="csv", interval="hour")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    header, *rows = response.content.decode().splitlines()
    assert header == "t,pageviews,source"
    assert len(rows) >= 48
    accept = client.get(f"/api/v1/sites/{site_key.site.site_id}/breakdown/pages", HTTP_ACCEPT="text/csv",
                        HTTP_AUTHORIZATION=f"Bearer {site_key.key}")  # fmt: skip
    assert accept.status_code == 200
    assert accept["Content-Type"].startswith("text/csv")
    assert accept.content.decode().splitlines() == ["value,pageviews,visitors"]  # no traffic: a header only


def test_csv_cells_that_look_like_formulas_are_neutralised() -> None:
    from api.renderers import CsvRenderer

    body = CsvRenderer().render({"results": [{"value": '=HYPERLINK("http://x")', "pageviews": 3}]}).decode()
    assert body.splitlines()[1].startswith("\"'=HYPERLINK")


@pytest.mark.django_db
def test_schema_and_docs_are_served() -> None:
    client = Client()
    schema = client.get("/api/v1/schema", HTTP_ACCEPT="application/json")
    assert schema.status_code == 200
    spec = schema.json()
    assert spec["openapi"].startswith("3.")
    assert "/api/v1/sites/{site_id}/timeseries" in spec["paths"]
    docs = client.get("/api/v1/docs")
    assert docs.status_code == 200
    assert b"swagger" in docs.content.lower()


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_an_unexpected_error_answers_the_json_error_shape_and_is_logged(
    site_key: SiteKey, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, fmt: str
) -> None:
    """A view that raises what nobody expected answers 500 in the API's error shape (never an
    HTML page), and the traceback is in the log."""

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a stored value nobody expected")

    monkeypatch.setattr(get_service(), "breakdown", broken)
    client = Client(raise_request_exception=False)
    with caplog.at_level("ERROR", logger="api.errors"):
        response = site_key.get(client, "breakdown/pages", format=fmt)
    assert response.status_code == 500
    if fmt == "json":
        assert response["Content-Type"] == "application/json"
        assert response.json() == {"error": {"parameter": None, "message": INTERNAL_ERROR}}
    else:
        assert response["Content-Type"].startswith("text/csv")
        assert response.content.decode().splitlines() == ["parameter,message", f",{INTERNAL_ERROR}"]
    [record] = [r for r in caplog.records if r.name == "api.errors"]
    assert record.exc_info is not None
    assert "a stored value nobody expected" in str(record.exc_info[1])
    assert "BreakdownView" in record.getMessage()
