"""Property-based tests of the API against its own generated OpenAPI schema (schemathesis).

Every operation gets generated parameters for a real site backed by the real stores; no
answer may be a 5xx, and every answer must match the schema (status code, content type,
body). Bounded by FOOTFALL_FUZZ_EXAMPLES (default 25 per operation) so CI stays quick; the
reliability suite runs it at full size.

The operations are driven with their Hypothesis strategies directly (not schemathesis's
pytest plugin, which does not support this pytest version yet).
"""

from __future__ import annotations

import dataclasses
import os
from collections import Counter

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import checks

from footfall.config import Config
from footfall_server.wsgi import application
from tests.integration.api.conftest import SiteKey

EXAMPLES = int(os.environ.get("FOOTFALL_FUZZ_EXAMPLES", "25"))
CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_schema_conformance,
]


@pytest.fixture
def unlimited(cfg: Config, monkeypatch: pytest.MonkeyPatch) -> None:
    """No per-key rate limit: every operation's examples run on one key within a minute or two,
    and a 429 (which the schema allows) would stop later operations reaching their code."""
    monkeypatch.setattr("api.auth.footfall_config", lambda: dataclasses.replace(cfg, api_rate_per_minute=1_000_000))


# Committed rows: the WSGI application closes the test's connection after each request.
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("unlimited")
def test_api_conforms_to_its_schema(site_key: SiteKey) -> None:
    schema = schemathesis.openapi.from_wsgi("/api/v1/schema?format=json", application)
    statuses: Counter = Counter()
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 6

    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def run(case: schemathesis.Case) -> None:
            # Mostly the key's own site (so generated parameters reach the stores), sometimes another.
            params = case.path_parameters or {}
            if "site_id" in params and not params["site_id"].startswith("x"):
                params["site_id"] = site_key.site.site_id
            response = case.call_and_validate(headers={"Authorization": f"Bearer {site_key.key}"}, checks=CHECKS)
            statuses[(case.operation.path, response.status_code)] += 1

        run()
    # The generated requests reached the real query code, not only the error paths.
    assert any(status == 200 for (_, status) in statuses), statuses
    assert {path for (path, status) in statuses if status == 200} >= {
        "/api/v1/sites/{site_id}/timeseries",
        "/api/v1/sites/{site_id}/realtime",
        "/api/v1/sites/{site_id}/aggregate",
    }, statuses
