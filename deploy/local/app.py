"""Footfall's own long-running processes for the local demo, started after the services.

Each entry is a process of the pipeline as it exists today; a component joins this list
as soon as it works, so ``deploy/local/up.sh`` always runs the whole pipeline.
"""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.error
import urllib.request

from deploy.local.procs import ProcessSpec, StackError, running_pid, start, wait_until
from deploy.local.services import REPO, StackConfig

# Started in this order, stopped in reverse.
APPS = ["web", "realtime-1", "realtime-2", "archiver", "celery", "celery-beat", "demo-traffic"]


def spec(cfg: StackConfig, name: str) -> ProcessSpec:
    """The process spec of app process ``name``, pointed at this stack."""
    env = {**os.environ, **cfg.app_environment(), "PYTHONUNBUFFERED": "1"}
    manage = [sys.executable, "manage.py"]
    celery = [sys.executable, "-m", "celery", "-A", "footfall.celery_app"]
    argv = {
        # Forking workers: each creates its own Kafka producer after the fork.
        "web": [
            sys.executable,
            "-m",
            "gunicorn",
            "footfall.wsgi",
            "--bind",
            f"127.0.0.1:{cfg.web_port}",
            "--workers",
            "2",
            "--threads",
            "4",
            "--access-logfile",
            "-",
        ],
        # Two workers share the events topic's partitions (a consumer group).
        "realtime-1": [*manage, "run_realtime"],
        "realtime-2": [*manage, "run_realtime"],
        # Files every 10 s at the demo's rate; production would batch minutes of traffic.
        "archiver": [*manage, "run_archiver", "--batch-time", "10"],
        # The nightly rollup, archive compaction, realtime housekeeping and spool replay
        # (broker: CELERY_BROKER_URL, the stack's Redis database 1).
        "celery": [*celery, "worker", "--loglevel", "INFO", "--concurrency", "2", "--hostname", "footfall@%h"],
        # Exactly one beat: its pid file refuses a second one; the schedule file keeps the last runs.
        "celery-beat": [
            *celery,
            "beat",
            "--loglevel",
            "INFO",
            "--schedule",
            str(cfg.state_dir / "data" / "celerybeat-schedule"),
            "--pidfile",
            str(cfg.run_dir / "celerybeat.lock"),
        ],
        "demo-traffic": [*manage, "demo_traffic", "--rate", os.environ.get("FOOTFALL_DEMO_RATE", "20")],
    }[name]
    return cfg.spec(name, argv, env=env)


def _web_healthy(cfg: StackConfig) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{cfg.web_port}/api/v1/health", timeout=2) as resp:
            return resp.status == 200
    except (urllib.error.URLError, OSError):
        return False


def collect_static(cfg: StackConfig) -> None:
    """Copy every app's static files (admin, Swagger UI) to STATIC_ROOT, where WhiteNoise serves them."""
    env = {**os.environ, **cfg.app_environment()}
    out = subprocess.run([sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    if out.returncode != 0:
        raise StackError(f"collectstatic failed: {out.stderr.strip()[-2000:]}")


def start_apps(cfg: StackConfig) -> None:
    """Start every app process that is not running (the web server after collecting static
    files, so a new release serves its own); wait for the web server to answer."""
    for name in APPS:
        app_spec = spec(cfg, name)
        pid = running_pid(app_spec)
        if name == "web" and not pid:
            collect_static(cfg)
        state = f"already running (pid {pid})" if pid else f"started (pid {start(app_spec)})"
        if name == "web":
            wait_until(
                lambda: _web_healthy(cfg),
                60,
                f"web on port {cfg.web_port}",
                alive=lambda s=app_spec: running_pid(s) is not None,
                log_file=app_spec.log_file,
            )
        print(f"{name:<12} {state}", flush=True)
