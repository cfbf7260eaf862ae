"""The alert and report endpoints against their generated OpenAPI schema, with a key that may
change them, so generated bodies reach validation and the database (the API-wide test uses a
read key, which these endpoints refuse changes from). No 5xx; every answer matches the schema."""

from __future__ import annotations

from collections import Counter

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings

from alerts.models import AlertRule, Channel, Episode
from footfall_server.wsgi import application
from tests.integration.api.conftest import SiteKey
from tests.integration.api.test_schemathesis import CHECKS, EXAMPLES, unlimited  # noqa: F401 - a fixture

PREFIXES = ("/api/v1/sites/{site_id}/alerts/", "/api/v1/sites/{site_id}/reports/")


# Committed rows: the WSGI application closes the test's connection after each request.
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("unlimited")
def test_alert_endpoints_conform_to_the_schema(manager: SiteKey) -> None:
    rule = AlertRule.objects.create(site=manager.site, name="Spike", kind="spike", threshold=3)
    rule.channels.add(Channel.objects.create(site=manager.site, name="Hook", kind="webhook", url="https://x.example"))
    Episode.objects.create(
        rule=rule,
        opened_at="2026-11-02T12:00:00Z",
        value=4,
        peak=5,
        details={"summary": "Visitors 5x the usual", "top_pages": [{"value": "/", "visitors": 3}]},
    )
    schema = schemathesis.openapi.from_wsgi("/api/v1/schema?format=json", application)
    operations = [r.ok() for r in schema.get_all_operations() if r.ok().path.startswith(PREFIXES)]
    assert len(operations) == 13, [o.label for o in operations]
    statuses: Counter = Counter()

    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def run(case: schemathesis.Case) -> None:
            params = case.path_parameters or {}
            if "site_id" in params and not params["site_id"].startswith("x"):
                params["site_id"] = manager.site.site_id
            if "rule_id" in params and case.method != "DELETE" and params["rule_id"] % 2:
                params["rule_id"] = rule.pk  # reach an existing rule too
            response = case.call_and_validate(headers={"Authorization": f"Bearer {manager.key}"}, checks=CHECKS)
            statuses[(case.operation.label, response.status_code)] += 1

        run()
    # Reads found rows, and generated bodies got past the scope check to validation (whether a
    # random body is also valid is chance: 201 or 400).
    ok = {label for (label, status) in statuses if status == 200}
    assert {"GET /api/v1/sites/{site_id}/alerts/episodes", "GET /api/v1/sites/{site_id}/alerts/rules"} <= ok, statuses
    validated = {label for (label, status) in statuses if status in (201, 400) and label.startswith("POST")}
    assert len(validated) == 3, statuses
    assert not any(status == 403 for (_, status) in statuses), statuses
