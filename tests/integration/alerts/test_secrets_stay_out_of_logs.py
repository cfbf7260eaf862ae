"""No secret reaches a log: after a webhook delivery (by the Celery worker, logging as the server
does), and a share link and an unsubscribe link opened through gunicorn as shipped (its access
log), no log file holds the webhook's path or secret, the share token or the unsubscribe token."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

from django.conf import settings

from alerts.models import ReportSubscription
from alerts.notify import episode_changed
from alerts.report_mail import unsubscribe_token
from dashboard.models import ShareLink
from footfall.models import Site
from tests.integration.alerts.conftest import make_episode, webhook_channel
from tests.ports import free_port
from tests.reliability.conftest import REPO
from tests.reliability.faults import wait_for

SLACK_LIKE_PATH = "/services/T0FF/B0FF/s3cr3tPathOfTheHook"


def status_of(url: str, data: bytes | None = None) -> int:
    """The answer's status; 0 while nothing listens."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0


def test_no_log_holds_a_secret_after_deliveries_shares_and_unsubscribes(
    site: Site, receiver, worker, allow_loopback, tmp_path: Path
) -> None:
    worker_log = tmp_path / "worker.log"
    handler = logging.FileHandler(worker_log)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.getLogger().addHandler(handler)  # the server's LOGGING: root at INFO, httpx at WARNING
    try:
        hook = receiver(200)
        channel = webhook_channel(site, hook.url + SLACK_LIKE_PATH)
        episode_changed(make_episode(channel), "opened")
        assert worker.wait_final() == ["SUCCESS"]
    finally:
        logging.getLogger().removeHandler(handler)
        handler.close()
    assert len(hook.requests) == 1

    _, share = ShareLink.issue(site, "for the board")
    subscription = ReportSubscription.objects.create(site=site, email="ann@example.com", frequency="weekly")
    unsubscribe = unsubscribe_token(subscription)
    port = free_port()
    access_log = tmp_path / "gunicorn.log"
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{settings.DATABASES['default']['NAME']}",
           "ALLOWED_HOSTS": "127.0.0.1"}  # fmt: skip
    with access_log.open("w") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", "python:footfall_server.gunicorn_config", "footfall_server.wsgi",
             "--bind", f"127.0.0.1:{port}", "--workers", "1", "--threads", "2"],
            cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: server.poll() is not None or status_of(f"{base}/api/v1/health") in (200, 503), 60, "gunicorn")
        assert status_of(f"{base}/dashboard/share/{share}") in (200, 302)
        assert status_of(f"{base}/alerts/unsubscribe/{unsubscribe}") == 200
        assert status_of(f"{base}/alerts/unsubscribe/{unsubscribe}", b"List-Unsubscribe=One-Click") == 200
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(30)
    subscription.refresh_from_db()
    assert subscription.unsubscribed_at is not None

    logs = {path.name: path.read_text() for path in (worker_log, access_log)}
    assert "/alerts/unsubscribe/[redacted]" in logs["gunicorn.log"]  # the requests are logged, without tokens
    assert "/dashboard/share/[redacted]" in logs["gunicorn.log"]
    for secret in (SLACK_LIKE_PATH, "s3cr3tPathOfTheHook", channel.secret, share, unsubscribe):
        for name, text in logs.items():
            assert secret not in text, f"{secret[:12]}… in {name}"
