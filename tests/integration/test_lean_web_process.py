"""A web process loads neither matplotlib nor pyarrow: after serving the collector, the API's
reads, the health check and the dashboard's sign-in page, a fresh process has imported neither
(report mail, the realtime workers and a raw export import them where they use them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import pytest
from django.conf import settings

from collector.runtime import get_ingestor
from footfall.models import ApiKey, Site
from tests.reliability.conftest import REPO

HEAVY = ("matplotlib", "pyarrow", "pyspark")
PROGRAM = """
import json, sys
import django
django.setup()
from django.test.utils import setup_test_environment
setup_test_environment()
from django.test import Client

site, key = sys.argv[1], sys.argv[2]
api = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
statuses = {
    "collect": Client().post("/collect", json.dumps({"site_id": site, "url": "https://example.com/"}),
                             content_type="text/plain", REMOTE_ADDR="203.0.113.7").status_code,
    "timeseries": api.get(f"/api/v1/sites/{site}/timeseries", {"from": "2026-01-01"}).status_code,
    "realtime": api.get(f"/api/v1/sites/{site}/realtime").status_code,
    "breakdown": api.get(f"/api/v1/sites/{site}/breakdown/pages").status_code,
    "channels": api.get(f"/api/v1/sites/{site}/alerts/channels").status_code,
    "export refused": api.get(f"/api/v1/sites/{site}/export").status_code,
    "health": Client().get("/api/v1/health").status_code,
    "sign-in page": Client().get("/dashboard/login/").status_code,
    "unsubscribe": Client().get("/alerts/unsubscribe/not-a-token").status_code,
}
print(json.dumps({"statuses": statuses, "loaded": {m: m in sys.modules for m in sys.argv[3:]}}))
"""


@pytest.mark.django_db(transaction=True)
def test_a_web_process_serves_without_matplotlib_or_pyarrow() -> None:
    site = Site.objects.create(site_id=f"lw-{uuid.uuid4().hex[:8]}", name="Lean", domains=["example.com"])
    get_ingestor().sites.invalidate()
    _, key = ApiKey.issue(site, "reader", ["read"])
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{settings.DATABASES['default']['NAME']}",
           "DJANGO_SETTINGS_MODULE": "footfall_server.settings"}  # fmt: skip
    run = subprocess.run([sys.executable, "-c", PROGRAM, site.site_id, key, *HEAVY], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    answer = json.loads(run.stdout.strip().splitlines()[-1])
    assert answer["statuses"] == {
        "collect": 202, "timeseries": 200, "realtime": 200, "breakdown": 200, "channels": 200, "export refused": 403,
        "health": 200, "sign-in page": 200, "unsubscribe": 400,
    }  # fmt: skip
    assert answer["loaded"] == dict.fromkeys(HEAVY, False)
