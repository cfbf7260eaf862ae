"""``/api/v1/health``: anonymous callers get ok/degraded only, from checks reused for a few
seconds with reused clients; a read key or a signed-in staff user also gets the details."""

from __future__ import annotations

import dataclasses
import threading

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from footfall.config import Config
from footfall.models import ApiKey, Site
from query.health import HealthChecks

DRIVER_TEXT = "unreachable: Error 111 connecting to redis-7.internal:6379. Connection refused."


class FakeChecks:
    def __init__(self, problems: dict[str, str | None]) -> None:
        self.problems = problems

    def status(self) -> dict[str, str | None]:
        return dict(self.problems)


@pytest.fixture
def degraded(monkeypatch: pytest.MonkeyPatch) -> None:
    checks = FakeChecks({"kafka": None, "redis": DRIVER_TEXT, "mongo": None})
    monkeypatch.setattr("api.views.get_health_checks", lambda: checks)


def test_anonymous_callers_get_the_status_only(degraded: None, client: Client) -> None:
    resp = client.get("/api/v1/health")
    assert resp.status_code == 503
    assert resp.json() == {"status": "degraded"}
    assert "redis-7" not in resp.content.decode()


def test_healthy_answer_is_200_ok(monkeypatch: pytest.MonkeyPatch, client: Client) -> None:
    checks = FakeChecks({"kafka": None, "redis": None, "mongo": None})
    monkeypatch.setattr("api.views.get_health_checks", lambda: checks)
    resp = client.get("/api/v1/health")
    assert (resp.status_code, resp.json()) == (200, {"status": "ok"})


@pytest.mark.django_db
def test_a_read_key_gets_the_details(degraded: None, client: Client) -> None:
    site = Site.objects.create(site_id="health-test", name="H", domains=["example.com"])
    _, read = ApiKey.issue(site, "monitor", ["read"])
    _, ingest = ApiKey.issue(site, "server", ["ingest"])
    resp = client.get("/api/v1/health", HTTP_AUTHORIZATION=f"Bearer {read}")
    assert resp.status_code == 503
    assert resp.json()["services"] == {"kafka": "ok", "redis": DRIVER_TEXT, "mongo": "ok"}
    assert "services" not in client.get("/api/v1/health", HTTP_AUTHORIZATION=f"Bearer {ingest}").json()


@pytest.mark.django_db
def test_signed_in_staff_get_the_details_other_users_do_not(degraded: None, client: Client) -> None:
    users = get_user_model().objects
    # force_login: signed in without a password check (whose throttle counts in Redis)
    client.force_login(users.create_user("plain"))
    assert "services" not in client.get("/api/v1/health").json()
    client.logout()
    client.force_login(users.create_user("ops", is_staff=True))
    assert client.get("/api/v1/health").json()["services"]["redis"] == DRIVER_TEXT


def test_each_store_is_checked_at_most_once_per_ttl(cfg: Config) -> None:
    """Many callers at once, and again within the TTL, cost one check of each store."""
    checks = HealthChecks(cfg, ttl_s=60.0)
    calls = {"kafka": 0, "redis": 0, "mongo": 0}
    for name in calls:

        def check(name: str = name) -> str | None:
            calls[name] += 1
            return None

        setattr(checks, f"_check_{name}", check)
    threads = [threading.Thread(target=checks.status) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    checks.status()
    assert calls == {"kafka": 1, "redis": 1, "mongo": 1}
    checks.ttl_s = 0.0
    checks.status()
    assert calls == {"kafka": 2, "redis": 2, "mongo": 2}


def test_clients_are_reused_between_checks(cfg: Config) -> None:
    """Pointed at a closed port, repeated checks reuse one client and still say what failed."""
    dead = dataclasses.replace(cfg, redis_url="redis://127.0.0.1:1/0")
    checks = HealthChecks(dead, ttl_s=0.0)
    first = checks._answer("redis")
    client = checks._redis
    second = checks._answer("redis")
    assert str(first).startswith("unreachable")
    assert str(second).startswith("unreachable")
    assert checks._redis is client is not None
