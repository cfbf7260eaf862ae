"""Command line for the local stack: ``python -m deploy.local.stack <command> [service ...]``.

Commands:
  install   download/build what the services need (cached; idempotent)
  start     install, start and health-check services (default: all), create topics
  start-apps  start Footfall's own processes (web, workers, demo traffic) on the stack
  stop      stop app processes and services; nothing is left running
  status    one line per service and app process, plus the event topics' sizes
  env       print ``export`` lines that point Footfall at this stack (for ``eval``)
  kill      SIGKILL one service or app process at once (fault injection in tests)

Configuration comes from ``FOOTFALL_*`` variables (see deploy/local/services.py and the
README). Errors print one clear message and exit with status 1.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time

from deploy.local import app
from deploy.local.procs import StackError, kill, running_pid, stop
from deploy.local.services import SERVICES, StackConfig

ORDER = ["redis", "mongo", "kafka", "spark", "chromium"]
OPTIONAL = ["spark-cluster"]  # started only when named; always stopped by a plain `stop`


def _services(names: list[str], cfg: StackConfig) -> list:
    unknown = [n for n in names if n not in SERVICES]
    if unknown:
        raise StackError(f"unknown service(s) {', '.join(unknown)}; choose from {', '.join(ORDER + OPTIONAL)}")
    return [SERVICES[name](cfg) for name in (names or ORDER)]


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
    specs = [] if names else [app.spec(cfg, name) for name in reversed(app.APPS)]
    services = _services(names, cfg) if names else _services(OPTIONAL + ORDER, cfg)
    specs += [spec for service in reversed(services) for spec in service.stop_specs()]
    for spec in specs:
        was_running = stop(spec, timeout=60.0)
        if was_running or names:
            print(f"{spec.name:<12} {'stopped' if was_running else 'not running'}", flush=True)


def cmd_status(cfg: StackConfig, _names: list[str]) -> None:
    for service in _services([], cfg):
        spec = service.process()
        if spec is None:
            continue
        pid = running_pid(spec)
        health = "healthy" if pid and service.healthy() else ("unhealthy" if pid else "stopped")
        print(f"{service.name:<12} {health:<10} {f'pid {pid}' if pid else ''}")
    for name in app.APPS:
        pid = running_pid(app.spec(cfg, name))
        print(f"{name:<12} {'running' if pid else 'stopped':<10} {f'pid {pid}' if pid else ''}")
    kafka = SERVICES["kafka"](cfg)
    if running_pid(kafka.process()) is not None:
        for topic, size in kafka.topic_sizes().items():
            print(f"topic {topic:<18} {size} messages")
    print(f"state: {cfg.state_dir}   logs: {cfg.log_dir}")


def cmd_env(cfg: StackConfig, _names: list[str]) -> None:
    for key, value in cfg.app_environment().items():
        print(f"export {key}={shlex.quote(value)}")


def cmd_start_apps(cfg: StackConfig, _names: list[str]) -> None:
    app.start_apps(cfg)


def cmd_kill(cfg: StackConfig, names: list[str]) -> None:
    for name in names:
        spec = app.spec(cfg, name) if name in app.APPS else _services([name], cfg)[0].process()
        print(f"{name:<12} {'killed' if kill(spec) else 'not running'}")


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
    parser.add_argument("services", nargs="*", help=f"services (default: all of {', '.join(ORDER)})")
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
