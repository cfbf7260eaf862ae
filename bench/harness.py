"""Plumbing shared by the collector benchmark and profiler: the service stack, the bench
site and environment, gunicorn servers, wrk runs and Kafka watermarks.

Every process started here is started in its own session and stopped by its process
group, so nothing is left behind after an error or Ctrl-C (callers register the stops on
an :class:`contextlib.ExitStack` before starting anything).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from bench.cpu import group_seconds
from deploy.local.checks import StackError
from deploy.local.services import StackConfig
from footfall.config import load_config

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
LUA = Path(__file__).resolve().parent / "wrk_collector.lua"
SITE_ID = "bench"
# JVM options of a private stack's Kafka broker (FOOTFALL_BENCH_BROKER_JVM overrides; empty:
# none). Why C1 only: a broker's C2 compiler runs in waves for its first minutes, and a private
# broker lives only as long as one benchmark. Measured during collector_bench rounds: the
# broker's CPU per 10 s round swung 0.6-3.3 s with C2 (compiler threads up to 1.1 s of a 10 s
# window, still after a minute of warm-up traffic), and slowed the gunicorns sharing its cores,
# against a steady 0.4-0.8 s with C1 only. A long-running broker has finished compiling; C1
# code is no faster than that, so what the broker costs a tracked variant is not understated.
PRIVATE_BROKER_JVM = "-XX:TieredStopAtLevel=1"
# Ports of a stack the benchmark starts itself: apart from the demo's (1xxxx) and
# test.sh's (2xxxx) so it can run while either is up; FOOTFALL_BENCH_<SERVICE>_PORT overrides.
OWN_PORTS = {"KAFKA": 39092, "REDIS": 36379, "MONGO": 37017, "WEB": 38000}


class BenchError(RuntimeError):
    """The benchmark itself failed (a server did not start, a tool is missing, ...)."""


@dataclass(frozen=True)
class CpuSplit:
    """Which CPUs the servers under test run on, and which the rest of the run uses (the
    bench process, wrk, a private stack's Kafka and Redis)."""

    servers: frozenset[int]
    rest: frozenset[int]

    def describe(self) -> str:
        return f"servers on CPU {_cpu_list(self.servers)}, wrk and stack on CPU {_cpu_list(self.rest)}"


def _cpu_list(cpus: frozenset[int]) -> str:
    return ",".join(str(cpu) for cpu in sorted(cpus))


def _parse_cpus(text: str) -> frozenset[int]:
    cpus: set[int] = set()
    for part in text.split(","):
        first, _, last = part.strip().partition("-")
        if not first.isdigit() or (last and not last.isdigit()):
            raise ValueError(f"{part!r} is not a CPU number or range (e.g. 0, 2-3)")
        low, high = int(first), int(last or first)
        if high < low:
            raise ValueError(f"{part!r} is an empty range")
        cpus.update(range(low, high + 1))
    return frozenset(cpus)


def parse_cpu_split(text: str, available: frozenset[int]) -> CpuSplit | None:
    """``SERVERS:REST`` (CPU lists such as ``0`` or ``0-1,3``), ``auto`` or ``none``.

    ``auto`` gives the servers every available CPU but the highest and the rest that one,
    or ``None`` (no split) on a single-CPU machine; ``none`` is ``None``. The two sets must
    be disjoint, non-empty and among ``available`` (this process's affinity); anything else
    raises :class:`ValueError` saying what is wrong."""
    if text == "none":
        return None
    if text == "auto":
        if len(available) < 2:
            return None
        last = max(available)
        return CpuSplit(available - {last}, frozenset({last}))
    servers_text, colon, rest_text = text.partition(":")
    if not colon:
        raise ValueError(f"{text!r}: expected SERVERS:REST (e.g. 0:1), auto or none")
    split = CpuSplit(_parse_cpus(servers_text), _parse_cpus(rest_text))
    if split.servers & split.rest:
        raise ValueError(f"{text!r}: CPU {_cpu_list(split.servers & split.rest)} is on both sides")
    unavailable = (split.servers | split.rest) - available
    if unavailable:
        raise ValueError(f"{text!r}: CPU {_cpu_list(unavailable)} is not available (have {_cpu_list(available)})")
    return split


def handle_signals() -> None:
    """Ctrl-C and SIGTERM raise KeyboardInterrupt, so the cleanup stack stops everything."""

    def handler(signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    # Also when started with SIGINT ignored (a shell's background job), where Python
    # would otherwise leave it ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, handler)


def free_port() -> int:
    """A TCP port nobody listens on right now (the kernel picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def debian_tool(name: str) -> str:
    """Path of the program ``name``, installing Debian's package of that name when it is
    missing and this runs as root (wrk; valgrind, which brings callgrind_control and vgdb)."""
    path = shutil.which(name)
    if path is None and shutil.which("apt-get") and os.geteuid() == 0:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        print(f"installing {name} (apt-get)", flush=True)
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
        subprocess.run(["apt-get", "install", "-y", "-qq", name], check=True, env=env)
        path = shutil.which(name)
    if path is None:
        raise BenchError(
            f"{name} is not installed: run `apt-get install -y {name}` as root (or install it from your distro)"
        )
    return path


# --- the service stack ----------------------------------------------------------------------
def _reachable(app_env: Mapping[str, str]) -> str | None:
    """None if Kafka (with the events topic) and Redis answer; else what is wrong."""
    import redis
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    cfg = load_config(app_env, REPO)
    try:
        redis.Redis.from_url(cfg.redis_url, socket_timeout=2).ping()
    except redis.RedisError as exc:
        return f"Redis at {cfg.redis_url}: {exc}"
    try:
        meta = AdminClient({"bootstrap.servers": cfg.kafka_bootstrap_servers, "log_level": 0}).list_topics(timeout=5)
    except KafkaException as exc:
        return f"Kafka at {cfg.kafka_bootstrap_servers}: {exc}"
    if cfg.events_topic not in meta.topics:
        return f"Kafka at {cfg.kafka_bootstrap_servers} has no topic {cfg.events_topic!r}"
    return None


@dataclass(frozen=True)
class Stack:
    app_env: dict[str, str]  # points Footfall's processes at the stack
    description: str
    stack_env: dict[str, str] | None  # the FOOTFALL_* stack variables, when known (pid files)
    own: bool = False  # started by the bench (so on the CPUs the bench had when it started it)


def use_stack(mode: str, workdir: Path, cleanup: contextlib.ExitStack) -> Stack:
    """A running stack to benchmark against.

    ``env``: the stack the environment names (``KAFKA_BOOTSTRAP_SERVERS``, ``REDIS_URL``:
    e.g. after ``eval "$(python -m deploy.local.stack env)"``), which must be up.
    ``own``: start Redis and Kafka (the collector needs nothing else) on the bench's own
    ports and a state directory under ``workdir``; stopped at the end.
    ``auto``: ``env`` when ``KAFKA_BOOTSTRAP_SERVERS`` is set, else ``own``.
    """
    if mode == "auto":
        mode = "env" if os.environ.get("KAFKA_BOOTSTRAP_SERVERS") else "own"
    if mode == "env":
        app_env = dict(os.environ)
        problem = _reachable(app_env)
        if problem:
            raise BenchError(
                f"the stack named by the environment is not usable ({problem}); start it or use --stack own"
            )
        try:  # the stack's own variables, if they describe the same Kafka (for its pid file)
            same = StackConfig.from_env(app_env).app_environment()["KAFKA_BOOTSTRAP_SERVERS"]
        except StackError:
            same = None
        stack_env = app_env if same == app_env["KAFKA_BOOTSTRAP_SERVERS"] else None
        return Stack(app_env, f"env (Kafka {app_env['KAFKA_BOOTSTRAP_SERVERS']})", stack_env)
    stack_env = {**os.environ, "FOOTFALL_STATE_DIR": str(workdir / "stack")}
    jvm = os.environ.get("FOOTFALL_BENCH_BROKER_JVM", PRIVATE_BROKER_JVM)
    if jvm:  # the `java` launcher reads JDK_JAVA_OPTIONS; the stack's own flags are unchanged
        stack_env["JDK_JAVA_OPTIONS"] = f"{os.environ.get('JDK_JAVA_OPTIONS', '')} {jvm}".strip()
    for service, default in OWN_PORTS.items():
        stack_env[f"FOOTFALL_{service}_PORT"] = os.environ.get(f"FOOTFALL_BENCH_{service}_PORT", str(default))
    stack = [PYTHON, "-m", "deploy.local.stack"]
    # Registered before starting: a start interrupted half-way still gets stopped.
    cleanup.callback(subprocess.run, [*stack, "stop"], env=stack_env, cwd=REPO, check=False)
    print(f"starting a private stack (redis, kafka) in {workdir / 'stack'}", flush=True)
    subprocess.run([*stack, "start", "redis", "kafka"], env=stack_env, cwd=REPO, check=True)
    app_env = {**os.environ, **StackConfig.from_env(stack_env).app_environment()}
    kafka = app_env["KAFKA_BOOTSTRAP_SERVERS"]
    description = f"own (Kafka {kafka}, broker JVM {jvm or 'default'}, state {workdir / 'stack'})"
    return Stack(app_env, description, stack_env, own=True)


def bench_env(app_env: Mapping[str, str], workdir: Path) -> dict[str, str]:
    """Environment of the bench's Django processes: production-like (DEBUG off, behind one
    proxy), a private SQLite database and spool under ``workdir``, and a flood limit no
    bench can reach (all load comes from one machine and six client addresses)."""
    env = {k: v for k, v in app_env.items() if k not in {"DATABASE_URL", "FOOTFALL_SPOOL_DIR", "FOOTFALL_ENV"}}
    env.update(
        DJANGO_SETTINGS_MODULE="bench.settings_bench",
        FOOTFALL_DATA_DIR=str(workdir / "data"),
        DEBUG="0",
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="127.0.0.1,localhost",
        FOOTFALL_CLIENT_RATE="100000",
        FOOTFALL_CLIENT_BURST="1000000",
        # Production sits behind one TLS proxy; wrk sends its X-Forwarded-For/-Proto headers.
        FOOTFALL_TRUSTED_PROXIES="1",
        FOOTFALL_BENCH_SITE=SITE_ID,
        PYTHONUNBUFFERED="1",
        # One string-hash seed for every server: with a random seed per process, each server's
        # dicts and sets lay out (and collide) differently, one source of two identical servers
        # running a few per cent apart (the A/A control).
        PYTHONHASHSEED="0",
    )
    env.pop("FOOTFALL_BENCH_MIDDLEWARE", None)  # the callers decide, not the caller's shell
    env.pop("FOOTFALL_BENCH_BEACON_MIDDLEWARE", None)
    return env


def create_site(env: Mapping[str, str]) -> None:
    """Migrate the bench database and register the bench site (both idempotent)."""
    manage = [PYTHON, "manage.py"]
    for argv in (
        ["migrate", "--noinput", "-v", "0"],
        ["create_site", SITE_ID, "--domain", "127.0.0.1", "--domain", "localhost"],
    ):
        out = subprocess.run([*manage, *argv], env=dict(env), cwd=REPO, capture_output=True, text=True)
        if out.returncode != 0:
            raise BenchError(f"manage.py {argv[0]} failed:\n{out.stdout}{out.stderr}")


# --- gunicorn --------------------------------------------------------------------------------
class Server:
    """One gunicorn serving the bench project; stop() ends its whole process group."""

    def __init__(
        self,
        name: str,
        env: Mapping[str, str],
        args: list[str],
        log_file: Path,
        port: int | None = None,
        cpus: frozenset[int] | None = None,
    ) -> None:
        self.name = name
        self.cpus = cpus  # run the master (and so the workers it forks) on these CPUs only
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = dict(env)
        self.argv = [PYTHON, "-m", "gunicorn", "footfall.wsgi:application", "--bind", f"127.0.0.1:{self.port}", *args]
        self.log_file = log_file
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0, probe: Callable[[], bool] | None = None) -> None:
        """Start it and wait until ``probe()`` (default: the bench project's 204 view) answers."""
        answers = probe or self._answers
        cpus = self.cpus
        # In the child before exec: the workers gunicorn forks inherit the affinity.
        pin = None if cpus is None else (lambda: os.sched_setaffinity(0, cpus))
        with self.log_file.open("ab") as log:
            self.proc = subprocess.Popen(
                self.argv, env=self.env, cwd=REPO, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, preexec_fn=pin,
            )  # fmt: skip
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BenchError(f"server {self.name} exited during start-up{self._log_tail()}")
            with contextlib.suppress(Exception):  # not listening yet, or a half-started worker
                if answers():
                    return
            time.sleep(0.2)
        raise BenchError(f"server {self.name} did not answer within {timeout:.0f}s{self._log_tail()}")

    def _answers(self) -> bool:
        request = urllib.request.Request(f"{self.url}/bench/empty", headers={"X-Forwarded-Proto": "https"})
        try:
            with urllib.request.urlopen(request, timeout=2) as resp:
                return resp.status == 204
        except (urllib.error.URLError, OSError):
            return False

    def _log_tail(self) -> str:
        lines = self.log_file.read_text(errors="replace").splitlines()[-20:]
        return f"\n  log {self.log_file}:\n    " + "\n    ".join(lines)

    def cpu_s(self) -> float:
        """CPU seconds used so far by the live processes of its group (master and workers)."""
        return group_seconds(self.proc.pid) if self.proc else 0.0

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM (gunicorn's graceful stop: workers flush their Kafka producers), then SIGKILL."""
        if self.proc is None:
            return
        for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(wait)
                break
        # Workers that outlived the master (they share its group) get the same end.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc = None


# --- load and measurement ----------------------------------------------------------------
def run_wrk(
    url: str, mode: str, threads: int, connections: int, duration: float, max_requests: int = 0
) -> dict[str, object]:
    """One wrk run; its summary as printed by the Lua script's done()."""
    argv = [debian_tool("wrk"), f"-t{threads}", f"-c{connections}", f"-d{duration:g}s", "--latency", "--timeout", "10s"]
    env = {**os.environ, "FFBENCH_MODE": mode, "FFBENCH_SITE": SITE_ID, "FFBENCH_MAX_REQUESTS": str(max_requests)}
    out = subprocess.run([*argv, "-s", str(LUA), url], env=env, capture_output=True, text=True, timeout=duration + 120)
    for line in out.stdout.splitlines():
        if line.startswith("FFBENCH "):
            return json.loads(line.removeprefix("FFBENCH "))
    raise BenchError(f"wrk failed (exit {out.returncode}):\n{out.stdout}{out.stderr}")


class Watermarks:
    """Sum of the events topic's high watermarks: how many events were ever produced."""

    def __init__(self, env: Mapping[str, str]) -> None:
        from confluent_kafka import Consumer

        cfg = load_config(env, REPO)
        self.topic = cfg.events_topic
        self.consumer = Consumer({"bootstrap.servers": cfg.kafka_bootstrap_servers, "group.id": "footfall-bench"})
        meta = self.consumer.list_topics(self.topic, timeout=10).topics[self.topic]
        self.partitions = sorted(meta.partitions)

    def total(self) -> int:
        from confluent_kafka import TopicPartition

        marks = [self.consumer.get_watermark_offsets(TopicPartition(self.topic, p), timeout=5) for p in self.partitions]
        return sum(high for _low, high in marks)

    def settled(self, quiet: float = 1.5, limit: float = 60.0) -> int:
        """The total once it has not moved for ``quiet`` seconds: the middleware delivers
        from a background queue, so its events keep arriving after the load stops."""
        last, since, deadline = self.total(), time.monotonic(), time.monotonic() + limit
        while time.monotonic() - since < quiet and time.monotonic() < deadline:
            time.sleep(0.25)
            now = self.total()
            if now != last:
                last, since = now, time.monotonic()
        return last

    def close(self) -> None:
        self.consumer.close()
