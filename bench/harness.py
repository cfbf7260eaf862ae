"""What the benchmarks share: a stack started through ``python -m deploy.local.stack``, the
bench site's Django environment, gunicorn servers, wrk runs, Kafka watermarks and CPU time.

The stack's services are the stack's business (its CLI starts and stops them); the harness
manages only its own short-lived processes, each in its own session, stopped by process
group, so nothing outlives an error or Ctrl-C (callers register stops on an ExitStack first).
"""

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
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
SITE_ID = "bench"
TICK = os.sysconf("SC_CLK_TCK")
# A private broker lives minutes, and its C2 compiler ran in waves all through the rounds,
# slowing the servers beside it; a long-running broker has finished compiling, so C1 only is
# closer to production. FOOTFALL_BENCH_BROKER_JVM overrides (empty: the JVM's default).
PRIVATE_BROKER_JVM = "-XX:TieredStopAtLevel=1"
# A private stack's ports, apart from the demo's (1xxxx) and test.sh's (2xxxx).
OWN_PORTS = {"KAFKA": 39092, "REDIS": 36379}


class BenchError(RuntimeError):
    """The benchmark itself failed (a server did not start, a tool is missing, ...)."""


def handle_signals() -> None:
    """Ctrl-C and SIGTERM raise KeyboardInterrupt, so the cleanup stack stops everything
    (also when started as a shell's background job, with SIGINT ignored)."""

    def handler(signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, handler)


def debian_tool(name: str) -> str:
    """Path of the program ``name``, installing Debian's package of that name when missing
    and running as root (wrk, valgrind)."""
    path = shutil.which(name)
    if path is None and shutil.which("apt-get") and os.geteuid() == 0:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
        subprocess.run(["apt-get", "install", "-y", "-qq", name], check=True, env=env)
        path = shutil.which(name)
    if path is None:
        raise BenchError(f"{name} is not installed: apt-get install -y {name}")
    return path


def free_port() -> int:
    """A TCP port nobody listens on right now (the kernel picks it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --- the stack -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Stack:
    env: dict[str, str]  # points Footfall's processes at the stack
    description: str
    own: bool  # started by the bench (on the CPUs the bench had then)


def use_stack(mode: str, workdir: Path, cleanup: contextlib.ExitStack, services: tuple[str, ...]) -> Stack:
    """``env``: the running stack the environment names (``KAFKA_BOOTSTRAP_SERVERS``...);
    ``own``: ``services`` started by the stack's CLI in ``workdir`` on the bench's own ports,
    stopped at the end; ``auto``: ``env`` when ``KAFKA_BOOTSTRAP_SERVERS`` is set."""
    if mode == "auto":
        mode = "env" if os.environ.get("KAFKA_BOOTSTRAP_SERVERS") else "own"
    if mode == "env":
        return Stack(dict(os.environ), f"env (Kafka {os.environ.get('KAFKA_BOOTSTRAP_SERVERS')})", own=False)
    stack_env = {**os.environ, "FOOTFALL_STATE_DIR": str(workdir / "stack")}
    for service, default in OWN_PORTS.items():
        stack_env[f"FOOTFALL_{service}_PORT"] = os.environ.get(f"FOOTFALL_BENCH_{service}_PORT", str(default))
    jvm = os.environ.get("FOOTFALL_BENCH_BROKER_JVM", PRIVATE_BROKER_JVM)
    if jvm:  # the `java` launcher reads JDK_JAVA_OPTIONS
        stack_env["JDK_JAVA_OPTIONS"] = f"{os.environ.get('JDK_JAVA_OPTIONS', '')} {jvm}".strip()
    cli = [PYTHON, "-m", "deploy.local.stack"]
    # Registered first: a start interrupted half-way still gets stopped.
    cleanup.callback(subprocess.run, [*cli, "stop"], env=stack_env, cwd=REPO, check=False)
    print(f"starting a private stack ({', '.join(services)}) in {workdir / 'stack'}", flush=True)
    subprocess.run([*cli, "start", *services], env=stack_env, cwd=REPO, check=True)
    exports = subprocess.run([*cli, "env"], env=stack_env, cwd=REPO, check=True, capture_output=True, text=True)
    app_env = dict(os.environ)
    for line in exports.stdout.splitlines():
        key, _, value = shlex.split(line.removeprefix("export "))[0].partition("=")
        app_env[key] = value
    return Stack(app_env, f"own (Kafka {app_env['KAFKA_BOOTSTRAP_SERVERS']}, broker JVM {jvm or 'default'})", True)


def bench_env(app_env: Mapping[str, str], workdir: Path) -> dict[str, str]:
    """Environment of the bench's Django servers: production-like (DEBUG off, behind one
    proxy), a private SQLite database and spool under ``workdir``, flood limits out of reach."""
    env = {k: v for k, v in app_env.items() if k not in {"DATABASE_URL", "FOOTFALL_SPOOL_DIR", "FOOTFALL_ENV"}}
    env.update(
        DJANGO_SETTINGS_MODULE="bench.settings_bench",
        FOOTFALL_DATA_DIR=str(workdir / "data"),
        DEBUG="0",
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="127.0.0.1,localhost",
        FOOTFALL_CLIENT_RATE="100000",
        FOOTFALL_CLIENT_BURST="1000000",
        FOOTFALL_TRUSTED_PROXIES="1",  # wrk sends the TLS proxy's X-Forwarded-For/-Proto
        PYTHONUNBUFFERED="1",
        # One string-hash seed for every server: with a random seed each, two identical
        # servers lay out their dicts differently and ran steadily ~8 % apart.
        PYTHONHASHSEED="0",
    )
    env.pop("FOOTFALL_BENCH_MIDDLEWARE", None)  # the callers decide, not the caller's shell
    return env


def manage(env: Mapping[str, str], *argv: str) -> str:
    """``manage.py argv`` in ``env``; its output, or BenchError with it."""
    out = subprocess.run([PYTHON, "manage.py", *argv], env=dict(env), cwd=REPO, capture_output=True, text=True)
    if out.returncode != 0:
        raise BenchError(f"manage.py {argv[0]} failed:\n{out.stdout}{out.stderr}")
    return out.stdout


def create_site(env: Mapping[str, str]) -> None:
    """Migrate the bench database and register the bench site (both idempotent)."""
    manage(env, "migrate", "--noinput", "-v", "0")
    manage(env, "create_site", SITE_ID, "--domain", "127.0.0.1", "--domain", "localhost")


# --- processes the bench owns ----------------------------------------------------------------
class Server:
    """One gunicorn serving ``footfall.wsgi``; stop() ends its whole process group."""

    def __init__(
        self, name: str, env: Mapping[str, str], args: list[str], log_file: Path,
        port: int | None = None, cpus: frozenset[int] | None = None,
    ) -> None:  # fmt: skip
        self.name, self.env, self.log_file, self.cpus = name, dict(env), log_file, cpus
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.argv = [PYTHON, "-m", "gunicorn", "footfall.wsgi:application", "--bind", f"127.0.0.1:{self.port}", *args]
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, probe: Callable[[], bool] | None = None, timeout: float = 90.0) -> None:
        """Start it and wait until ``probe()`` (default: the bench's 204 view answers) is true."""
        cpus = self.cpus  # set in the child before exec: the workers gunicorn forks inherit it
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
                if (probe or self._empty_answers)():
                    return
            time.sleep(0.2)
        raise BenchError(f"server {self.name} did not answer within {timeout:.0f}s; log: {self.log_file}")

    def _empty_answers(self) -> bool:
        request = urllib.request.Request(f"{self.url}/bench/empty", headers={"X-Forwarded-Proto": "https"})
        with urllib.request.urlopen(request, timeout=2) as resp:
            return bool(resp.status == 204)

    def cpu_s(self) -> float:
        """CPU seconds used so far by the live processes of its group (master and workers)."""
        return group_seconds(self.proc.pid) if self.proc else 0.0

    def stop(self) -> None:
        """SIGTERM (gunicorn's graceful stop flushes the workers' producers), then SIGKILL."""
        if self.proc is None:
            return
        for sig, wait in ((signal.SIGTERM, 20.0), (signal.SIGKILL, 5.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(wait)
                break
        with contextlib.suppress(ProcessLookupError):  # workers that outlived the master
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc = None


def run_wrk(url: str, mode: str, threads: int, connections: int, duration: float) -> dict[str, Any]:
    """One wrk run with ``bench/wrk_collector.lua``; the summary its done() prints."""
    argv = [debian_tool("wrk"), f"-t{threads}", f"-c{connections}", f"-d{duration:g}s", "--latency", "--timeout", "10s"]
    env = {**os.environ, "FFBENCH_MODE": mode, "FFBENCH_SITE": SITE_ID}
    lua = Path(__file__).with_name("wrk_collector.lua")
    out = subprocess.run([*argv, "-s", str(lua), url], env=env, capture_output=True, text=True, timeout=duration + 120)
    for line in out.stdout.splitlines():
        if line.startswith("FFBENCH "):
            return dict(json.loads(line.removeprefix("FFBENCH ")))
    raise BenchError(f"wrk failed (exit {out.returncode}):\n{out.stdout}{out.stderr}")


class Watermarks:
    """Sum of the events topic's high watermarks: how many events were ever produced."""

    def __init__(self, env: Mapping[str, str]) -> None:
        from confluent_kafka import Consumer

        self.topic = env.get("FOOTFALL_EVENTS_TOPIC", "events")
        self.consumer = Consumer({"bootstrap.servers": env["KAFKA_BOOTSTRAP_SERVERS"], "group.id": "footfall-bench"})
        self.partitions = sorted(self.consumer.list_topics(self.topic, timeout=10).topics[self.topic].partitions)

    def total(self) -> int:
        from confluent_kafka import TopicPartition

        tps = [TopicPartition(self.topic, p) for p in self.partitions]
        return sum(self.consumer.get_watermark_offsets(tp, timeout=5)[1] for tp in tps)

    def settled(self, quiet: float = 1.5, limit: float = 60.0) -> int:
        """The total once it has not moved for ``quiet`` seconds (the middleware delivers
        from a background queue, so events keep arriving after the load stops)."""
        last, since, deadline = self.total(), time.monotonic(), time.monotonic() + limit
        while time.monotonic() - since < quiet and time.monotonic() < deadline:
            time.sleep(0.25)
            if (now := self.total()) != last:
                last, since = now, time.monotonic()
        return last

    def close(self) -> None:
        self.consumer.close()


# --- CPU time from /proc ---------------------------------------------------------------------
def group_seconds(pgid: int) -> float:
    """User + system CPU seconds of the live processes in process group ``pgid``."""
    ticks = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # ended while we looked
        if int(fields[2]) == pgid:
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / TICK


def machine_busy_seconds() -> float:
    """CPU seconds all cores spent not idle since boot."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:9]]
    return (sum(values) - values[3] - values[4]) / TICK


def own_cpu_seconds(children: bool = False) -> float:
    """CPU seconds of this process, or of its waited-for children (wrk)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    return {"host": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version(),
            "loadavg": [round(x, 2) for x in os.getloadavg()]}  # fmt: skip


def write_json(doc: Mapping[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    print(f"JSON: {path}")


# --- which CPUs the servers under test use ---------------------------------------------------
@dataclass(frozen=True)
class CpuSplit:
    """The servers' CPUs, and the rest's (the bench process, wrk, a private stack)."""

    servers: frozenset[int]
    rest: frozenset[int]

    def describe(self) -> str:
        return f"servers on CPU {sorted(self.servers)}, wrk and stack on CPU {sorted(self.rest)}"


def parse_cpu_split(text: str, available: frozenset[int]) -> CpuSplit | None:
    """``auto``: the highest available CPU for the rest, the others for the servers (no split
    on one CPU); ``none``: no split. Anything else is a ValueError."""
    if text not in {"auto", "none"}:
        raise ValueError(f"{text!r}: expected auto or none")
    if text == "none" or len(available) < 2:
        return None
    return CpuSplit(available - {max(available)}, frozenset({max(available)}))
