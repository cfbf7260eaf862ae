"""Command line for the local stack: ``python -m deploy.local.stack <command> [service ...]``.

Commands:
  install   download/build what the services need (cached; idempotent)
  start     install, start and health-check services (default: all), create topics
  start-apps  start Footfall's own processes (default: all of web, workers, demo traffic)
  stop      stop app processes and services; nothing is left running
  status    one line per service and app process, plus the event topics' sizes
  env       print ``export`` lines that point Footfall at this stack (for ``eval``)
  kill      SIGKILL a service, or any one process (an app, kafka-broker-2), at once (fault injection)

Every process (services and Footfall's own) runs under one supervisord per state directory,
declared in deploy/local/supervisord.conf; a plain ``stop`` shuts supervisord down too.
With ``FOOTFALL_KAFKA_BROKERS=3`` the service ``kafka`` is a cluster of three nodes
(deploy/local/cluster.sh).
Configuration comes from ``FOOTFALL_*`` variables (see deploy/local/services.py and
docs/local-stack.md). Errors print one clear message and exit with status 1.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import time
import urllib.error
import urllib.request

from deploy.local.checks import StackError, wait_until
from deploy.local.services import REPO, SERVICES, StackConfig, make_service

ORDER = ["redis", "mongo", "kafka", "spark", "chromium"]
# Started only when named; always stopped by a plain `stop`.
OPTIONAL = ["spark-cluster", "minio", "redis-shards", "deploy-tools"]
# Footfall's own processes (supervisord.conf), started in this order after the services, stopped in reverse.
APPS = ["web", "realtime-1", "realtime-2", "archiver", "celery", "celery-beat", "demo-traffic"]


def _services(names: list[str], cfg: StackConfig) -> list:
    unknown = [n for n in names if n not in SERVICES]
    if unknown:
        raise StackError(f"unknown service(s) {', '.join(unknown)}; choose from {', '.join(ORDER + OPTIONAL)}")
    return [make_service(name, cfg) for name in (names or ORDER)]


def cmd_install(cfg: StackConfig, names: list[str]) -> None:
    for service in _services(names, cfg):
        started = time.monotonic()
        service.install()
        print(f"{service.name:<8} installed ({time.monotonic() - started:.1f}s)", flush=True)


def cmd_start(cfg: StackConfig, names: list[str]) -> None:
    for service in _services(names, cfg):
        started = time.monotonic()
        state = service.start()
        print(f"{service.name:<8} {state} ({time.monotonic() - started:.1f}s)", flush=True)


def cmd_stop(cfg: StackConfig, names: list[str]) -> None:
    supervisor = cfg.supervisor()
    stopped = [] if names else [(name, supervisor.stop(name)) for name in reversed(APPS)]
    services = _services(names, cfg) if names else _services(OPTIONAL + ORDER, cfg)
    stopped += [result for service in reversed(services) for result in service.stop()]
    for name, was_running in stopped:
        if was_running or names:
            print(f"{name:<12} {'stopped' if was_running else 'not running'}", flush=True)
    if not names:
        supervisor.shutdown()


def cmd_status(cfg: StackConfig, _names: list[str]) -> None:
    supervisor = cfg.supervisor()
    for service in _services(ORDER + OPTIONAL, cfg):
        if service.program is None:
            continue
        pid = service.pid()
        health = "healthy" if pid and service.healthy() else ("unhealthy" if pid else "stopped")
        print(f"{service.name:<12} {health:<10} {f'pid {pid}' if pid else ''}")
        for name in reversed(service.programs()) if len(service.programs()) > 1 else []:
            node = supervisor.pid(name)
            print(f"  {name:<14} {'running' if node else 'stopped':<8} {f'pid {node}' if node else ''}")
    for name in APPS:
        pid = supervisor.pid(name)
        print(f"{name:<12} {'running' if pid else 'stopped':<10} {f'pid {pid}' if pid else ''}")
    kafka = make_service("kafka", cfg)
    if kafka.pid() is not None:
        for topic, size in kafka.topic_sizes().items():
            print(f"topic {topic:<18} {size} messages")
    print(f"state: {cfg.state_dir}   logs: {cfg.log_dir}")


def cmd_env(cfg: StackConfig, _names: list[str]) -> None:
    for key, value in cfg.app_environment().items():
        print(f"export {key}={shlex.quote(value)}")


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


def cmd_start_apps(cfg: StackConfig, names: list[str]) -> None:
    """Start the named app processes (default: every one) that are not running, the web
    server after collecting static files, so a new release serves its own; wait for the web
    server to answer."""
    unknown = [n for n in names if n not in APPS]
    if unknown:
        raise StackError(f"unknown app process(es) {', '.join(unknown)}; choose from {', '.join(APPS)}")
    supervisor = cfg.supervisor()
    for name in [n for n in APPS if n in names] if names else APPS:
        pid = supervisor.pid(name)
        if name == "web" and not pid:
            collect_static(cfg)
        state = f"already running (pid {pid})" if pid else f"started (pid {supervisor.start(name)})"
        if name == "web":
            wait_until(
                lambda: _web_healthy(cfg),
                60,
                f"web on port {cfg.web_port}",
                alive=lambda: supervisor.pid("web") is not None,
                log_file=supervisor.log_file("web"),
            )
        print(f"{name:<12} {state}", flush=True)


def cmd_kill(cfg: StackConfig, names: list[str]) -> None:
    for name in names:
        killed = _services([name], cfg)[0].kill() if name in SERVICES else cfg.supervisor().kill(name)
        print(f"{name:<12} {'killed' if killed else 'not running'}")


COMMANDS = {
    "install": cmd_install,
    "start": cmd_start,
    "stop": cmd_stop,
    "status": cmd_status,
    "start-apps": cmd_start_apps,
    "env": cmd_env,
    "kill": cmd_kill,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="stack", description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("command", choices=sorted(COMMANDS))
    parser.add_argument(
        "services", nargs="*", help=f"services (default: all of {', '.join(ORDER)}); processes for start-apps and kill"
    )
    args = parser.parse_args(argv)
    try:
        cfg = StackConfig.from_env(os.environ)
        COMMANDS[args.command](cfg, args.services)
    except StackError as exc:
        print(f"stack {args.command}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
