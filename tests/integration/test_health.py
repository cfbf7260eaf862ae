"""The health endpoint over real services, and what it says when one is unreachable."""

from __future__ import annotations

import dataclasses

from django.test import Client

from footfall.config import Config
from query.health import HealthChecks, check_all


def test_health_is_ok_when_services_answer(client: Client, cfg: Config) -> None:
    resp = client.get("/api/v1/health")
    assert resp.status_code == 200
    assert resp.json() == {"status": "ok"}
    assert HealthChecks(cfg).status() == {"kafka": None, "redis": None, "mongo": None}


def test_unreachable_services_are_named(cfg: Config) -> None:
    """Pointed at closed ports, each check returns a reason instead of hanging or raising."""
    dead = dataclasses.replace(
        cfg,
        kafka_bootstrap_servers="127.0.0.1:1",
        redis_url="redis://127.0.0.1:1/0",
        mongo_url="mongodb://127.0.0.1:1/",
    )
    problems = check_all(dead)
    assert set(problems) == {"kafka", "redis", "mongo"}
    assert all(reason and reason.startswith("unreachable") for reason in problems.values())
