"""What the benchmarks share: a stack started through ``python -m deploy.local.stack``, gunicorn
servers (each in its own session, stopped by process group), CPU time from /proc, JSON output."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import resource
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

import redis

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
OUT = REPO / "artifacts" / "bench"
TICK = os.sysconf("SC_CLK_TCK")
# A private broker lives minutes, its C2 compiler ran in waves all through the rounds, slowing the servers
# beside it; C1 only is closer to a long-running broker. FOOTFALL_BENCH_BROKER_JVM overrides ("": default).
PRIVATE_BROKER_JVM = "-XX:TieredStopAtLevel=1"
OWN_PORTS = {"KAFKA": 39092, "REDIS": 36379}  # apart from the demo's (1xxxx) and test.sh's (2xxxx)


class BenchError(RuntimeError):
    """The benchmark itself failed (a server did not start, a tool is missing, ...)."""


def tool(name: str) -> str:
    """Path of the program ``name``; BenchError when it is not installed."""
    if path := shutil.which(name):
        return path
    raise BenchError(f"{name} is not installed: apt-get install -y {name}")


def use_stack(mode: str, workdir: Path, cleanup: contextlib.ExitStack, services: tuple[str, ...]) -> tuple[dict, str]:
    """(environment, description) of a stack: ``env`` the one the environment names, ``own`` ``services`` on the
    bench's ports, started in ``workdir`` by the stack's CLI (stopped by ``cleanup``), ``auto`` ``env`` if named."""
    if mode == "env" or (mode == "auto" and os.environ.get("KAFKA_BOOTSTRAP_SERVERS")):
        return dict(os.environ), f"env (Kafka {os.environ.get('KAFKA_BOOTSTRAP_SERVERS')})"
    stack_env = {**os.environ, "FOOTFALL_STATE_DIR": str(workdir / "stack")}
    for service, default in OWN_PORTS.items():
        stack_env[f"FOOTFALL_{service}_PORT"] = os.environ.get(f"FOOTFALL_BENCH_{service}_PORT", str(default))
    if jvm := os.environ.get("FOOTFALL_BENCH_BROKER_JVM", PRIVATE_BROKER_JVM):  # `java` reads JDK_JAVA_OPTIONS
        stack_env["JDK_JAVA_OPTIONS"] = f"{os.environ.get('JDK_JAVA_OPTIONS', '')} {jvm}".strip()
    cli = [PYTHON, "-m", "deploy.local.stack"]
    # Registered first: a start interrupted half-way still gets stopped.
    cleanup.callback(subprocess.run, [*cli, "stop"], env=stack_env, cwd=REPO, check=False)
    print(f"starting a private stack ({', '.join(services)}) in {workdir / 'stack'}", flush=True)
    subprocess.run([*cli, "start", *services], env=stack_env, cwd=REPO, check=True)
    exports = subprocess.run([*cli, "env"], env=stack_env, cwd=REPO, check=True, capture_output=True, text=True)
    env = dict(os.environ)
    for line in exports.stdout.splitlines():
        key, _, value = shlex.split(line.removeprefix("export "))[0].partition("=")
        env[key] = value
    return env, f"own (Kafka {env['KAFKA_BOOTSTRAP_SERVERS']}, broker JVM {jvm or 'default'})"


def manage(env: Mapping[str, str], *argv: str) -> str:
    """``manage.py argv`` in ``env``; its output, or BenchError with it."""
    out = subprocess.run([PYTHON, "manage.py", *argv], env=dict(env), cwd=REPO, capture_output=True, text=True)
    if out.returncode != 0:
        raise BenchError(f"manage.py {argv[0]} failed:\n{out.stdout}{out.stderr}")
    return out.stdout


def unlink_matching(client: redis.Redis, *patterns: str) -> None:
    """Remove the Redis keys matching ``patterns`` (a bench's own site: only its keys)."""
    for pattern in patterns:
        keys = list(client.scan_iter(match=pattern, count=5000))
        for start in range(0, len(keys), 5000):
            client.unlink(*keys[start : start + 5000])


def server_env(env: Mapping[str, str], workdir: Path, settings: str, **extra: str) -> dict[str, str]:
    """Environment of a bench's Django servers: production-like, their database and data in ``workdir``, ``extra``."""
    drop = {"DATABASE_URL", "FOOTFALL_SPOOL_DIR", "FOOTFALL_ENV", "FOOTFALL_BENCH_MIDDLEWARE"}
    return {k: v for k, v in env.items() if k not in drop} | dict(
        DJANGO_SETTINGS_MODULE=settings, FOOTFALL_DATA_DIR=str(workdir / "data"), DEBUG="0", PYTHONUNBUFFERED="1",
        SECRET_KEY=secrets.token_urlsafe(50), ALLOWED_HOSTS="127.0.0.1,localhost", FOOTFALL_TRUSTED_PROXIES="0",
    ) | extra  # fmt: skip


class Server:
    """One gunicorn serving ``footfall_server.wsgi``; stop() ends its whole process group."""

    def __init__(self, name: str, env: Mapping[str, str], log_file: Path, keep_alive: int = 5, timeout: int = 60,
                 cpus: frozenset[int] | None = None) -> None:  # fmt: skip
        self.name, self.env, self.log_file, self.cpus = name, dict(env), log_file, cpus
        with socket.socket() as sock:  # a free port: the kernel picks it
            sock.bind(("127.0.0.1", 0))
            self.port = int(sock.getsockname()[1])
        self.url = f"http://127.0.0.1:{self.port}"
        # gthread keeps connections alive as behind a proxy (sync workers would make the load
        # measure TCP set-up); a few threads overlap the short waits (Redis, SQLite) as in production.
        self.args = ["--worker-class", "gthread", "--workers", "2", "--threads", "4", "--keep-alive", str(keep_alive),
                     "--timeout", str(timeout), "--graceful-timeout", "15", "--log-level", "warning"]  # fmt: skip
        self.argv = [PYTHON, "-m", "gunicorn", "footfall_server.wsgi:application", "--bind", f"127.0.0.1:{self.port}"]
        self.argv += self.args
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, probe: Callable[[], bool], timeout: float = 90.0) -> None:
        """Start it on ``cpus`` (set before exec: gunicorn's workers inherit it); wait until ``probe()`` is true."""
        cpus = self.cpus
        with self.log_file.open("ab") as log:
            self.proc = subprocess.Popen(
                self.argv, env=self.env, cwd=REPO, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, preexec_fn=None if cpus is None else lambda: os.sched_setaffinity(0, cpus),
            )  # fmt: skip
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BenchError(f"server {self.name} exited during start-up; log: {self.log_file}")
            with contextlib.suppress(Exception):  # not listening yet
                if probe():
                    return
            time.sleep(0.2)
        raise BenchError(f"server {self.name} did not answer within {timeout:.0f}s; log: {self.log_file}")

    def cpu_s(self) -> float:
        """CPU seconds used so far by the live processes of its group (master and workers)."""
        return group_seconds(self.proc.pid) if self.proc else 0.0

    def stop(self) -> None:
        """SIGTERM (gunicorn's graceful stop flushes the workers' producers), then SIGKILL."""
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(20)
        with contextlib.suppress(ProcessLookupError):  # a master that did not stop, workers that outlived it
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(5)
        self.proc = None


def _stat_ticks(stat: Path) -> tuple[int, int]:
    """(process group, utime + stime ticks) of a /proc/<pid>/stat file; (0, 0) once the process ended."""
    with contextlib.suppress(OSError, IndexError):
        fields = stat.read_text().rsplit(")", 1)[1].split()
        return int(fields[2]), int(fields[11]) + int(fields[12])
    return 0, 0


def group_seconds(pgid: int) -> float:
    """User + system CPU seconds of the live processes in process group ``pgid``."""
    return sum(used for group, used in map(_stat_ticks, Path("/proc").glob("[0-9]*/stat")) if group == pgid) / TICK


def cpu_seconds(pid: int | None = None, children: bool = False) -> float:
    """CPU seconds of process ``pid`` (all its threads), else of this process or of its waited-for children."""
    if pid is not None:
        return _stat_ticks(Path(f"/proc/{pid}/stat"))[1] / TICK
    usage = resource.getrusage(resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    return {"host": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version(),
            "loadavg": [round(x, 2) for x in os.getloadavg()]}  # fmt: skip


def columns(rows: Sequence[Sequence[object]]) -> None:
    """Print ``rows`` (the first a header) in aligned columns: the first left-aligned, the others right."""
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print(*(f"{c!s:<{w}}" if i == 0 else f"{c!s:>{w}}" for i, (c, w) in enumerate(zip(row, widths, strict=True))))


def run_main(run: Callable[[contextlib.ExitStack], dict[str, Any]], show: Callable[[dict[str, Any]], None], out: Path,
             errors: tuple[type[Exception], ...] = ()) -> int:  # fmt: skip
    """Run a bench with a cleanup stack, print and write its result; exit 1 if failed or not ``ok``, 130 if stopped."""

    def stop(signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    # KeyboardInterrupt unwinds the cleanup stack, also in a shell's background job (SIGINT ignored).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, stop)
    try:
        with contextlib.ExitStack() as cleanup:
            doc = run(cleanup)
    except (BenchError, subprocess.CalledProcessError, *errors) as exc:
        print(f"benchmark FAILED: {exc!r}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted; what the bench started is stopped", file=sys.stderr)
        return 130
    show(doc)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    print(f"JSON: {out}")
    return 0 if doc.get("ok", True) else 1
