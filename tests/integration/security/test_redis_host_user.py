"""A host site's Redis user (``manage.py redis_host_user``) on the stack's Redis: it reads the
salts the server made ahead, and is refused everything else."""

from __future__ import annotations

import datetime as dt
import os
import secrets
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from collector.tasks import make_salts_ahead
from footfall.config import Config
from footfall_capture.salt_days import SaltUnavailable, salt_days_around
from footfall_capture.salts import KEY, SaltStore
from tests.integration.security.conftest import REPO


def redis_host_user(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "manage.py", "redis_host_user", *args], cwd=REPO, env=dict(os.environ),
                          input=stdin, capture_output=True, text=True, timeout=60)  # fmt: skip


@pytest.fixture
def host_client(cfg: Config) -> Iterator[redis.Redis]:
    """A client of the stack's Redis signed in as a new host user; the user is removed after."""
    user, password = f"host-{uuid.uuid4().hex[:6]}", secrets.token_urlsafe(24)
    made = redis_host_user(user, "--password-file", "-", stdin=password)
    assert made.returncode == 0, made.stderr
    assert f"{user} may read the daily salts and nothing else" in made.stdout
    client = redis.Redis.from_url(cfg.redis_url, username=user, password=password, socket_timeout=5)
    try:
        yield client
    finally:
        client.close()
        removed = redis_host_user(user, "--remove")
        assert removed.returncode == 0, removed.stderr
        assert f"removed {user}" in removed.stdout


def test_a_host_user_reads_the_salts_made_ahead_and_nothing_else(cfg: Config, host_client: redis.Redis) -> None:
    days = [dt.date.fromisoformat(day) for day in make_salts_ahead()]  # the server's task, as beat runs it
    assert days == salt_days_around(dt.datetime.now(dt.UTC))
    server = redis.Redis.from_url(cfg.redis_url)
    today = dt.datetime.now(dt.UTC).date()

    # The host's store is refused creating salts once, then reads what the server made.
    store = SaltStore(host_client)
    assert store.salt(today) == server.get(KEY.format(day=today.isoformat()))
    assert store.read_only
    assert store.salt(today + dt.timedelta(days=1)) == server.get(
        KEY.format(day=(today + dt.timedelta(days=1)).isoformat())
    )

    # A day nobody made is unavailable (the events wait), not made by the host.
    far = today + dt.timedelta(days=30)
    with pytest.raises(SaltUnavailable, match="may not create one"):
        SaltStore(host_client).salt(far)
    assert server.exists(KEY.format(day=far.isoformat())) == 0

    refused = {
        "overwrite a salt": lambda: host_client.set(KEY.format(day=today.isoformat()), b"mine"),
        "delete a salt": lambda: host_client.delete(KEY.format(day=today.isoformat())),
        "read another key": lambda: host_client.get("ff:rl:anything"),
        "list keys": lambda: host_client.keys("*"),
        "queue a Celery job": lambda: host_client.lpush("celery", b"{}"),
        "reset a rate limit": lambda: host_client.delete("LIMITS:LIMITER/api/x"),
        "FLUSHALL": lambda: host_client.flushall(),
        "read the configuration": lambda: host_client.config_get("*"),
        "list the users": lambda: host_client.acl_list(),
    }
    allowed = []
    for what, attempt in refused.items():
        try:
            attempt()
            allowed.append(what)
        except redis.exceptions.NoPermissionError:
            pass
    assert allowed == []


def test_a_short_or_missing_password_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    short = redis_host_user("host-short", "--password-file", "-", stdin="too-short")
    assert short.returncode == 1
    assert "at least 16 are needed" in short.stderr
    missing = redis_host_user("host-missing", "--password-file", str(tmp_path / "nowhere"))
    assert missing.returncode == 1
    assert "--password-file:" in missing.stderr
