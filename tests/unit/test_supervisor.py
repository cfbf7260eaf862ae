"""The local stack's processes under supervisord: the config declares every process the stack
starts, and the client starts, finds and stops them, leaving no process behind."""

from __future__ import annotations

import os
import platform
import re
import shlex
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from supervisor.options import ServerOptions

from deploy.local.checks import StackError, ensure_port_free, wait_until
from deploy.local.services import SERVICES, Kafka, KafkaCluster, StackConfig, make_service
from deploy.local.stack import APPS, OPTIONAL, ORDER
from deploy.local.supervisor import CONF, Supervisor, _alive
from footfall.config import LOCAL_PORTS, load_config

# --- the config (deploy/local/supervisord.conf) ------------------------------------------------


def _programs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict:
    """The config's processes by name, as supervisord reads them for a stack in ``tmp_path``."""
    env = {"FOOTFALL_STATE_DIR": str(tmp_path), "FOOTFALL_WEB_PORT": "28000", "FOOTFALL_KAFKA_PORT": "29092"}
    cfg = StackConfig.from_env(env)
    for key, value in {**cfg.supervisor_environment(), **env}.items():
        monkeypatch.setenv(key, value)
    for folder in ("logs", "run"):  # supervisord's own log and pid file go there
        (tmp_path / folder).mkdir(exist_ok=True)
    options = ServerOptions()  # reads the environment when created
    options.realize(["-c", str(CONF)])
    return {p.name: p for group in options.process_group_configs for p in group.process_configs}


def test_config_declares_every_process_the_stack_runs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Each app and service process has a program, and the config has no other."""
    programs = _programs(monkeypatch, tmp_path)
    cfg = StackConfig.from_env({"FOOTFALL_STATE_DIR": str(tmp_path)})
    services = [name for service in ORDER + OPTIONAL for name in SERVICES[service](cfg).programs()]
    brokers = KafkaCluster(StackConfig.from_env({"FOOTFALL_STATE_DIR": str(tmp_path), "FOOTFALL_KAFKA_BROKERS": "3"}))
    assert sorted(programs) == sorted(APPS + services + brokers.programs())


def test_config_leaves_starting_and_restarting_to_the_stack(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Nothing starts or restarts by itself; every process stops as a group and logs where the stack looks."""
    for name, program in _programs(monkeypatch, tmp_path).items():
        assert (program.autostart, program.autorestart, program.startsecs) == (False, False, 0), name
        assert program.stopasgroup, name
        assert program.killasgroup, name
        assert program.stdout_logfile == str(tmp_path / "logs" / f"{name}.log"), name
        assert program.redirect_stderr, name


def test_config_commands_use_the_stack_ports(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    programs = _programs(monkeypatch, tmp_path)
    command = {name: shlex.split(program.command) for name, program in programs.items()}
    assert command["web"][command["web"].index("--bind") + 1] == "127.0.0.1:28000"
    assert command["kafka"][-1] == str(tmp_path / "kafka-29092" / "server.properties")
    assert [name for name, argv in command.items() if "beat" in argv] == ["celery-beat"]  # exactly one beat
    assert command["spark-worker-1"][2] == "spark://127.0.0.1:29122"  # FOOTFALL_SPARK_PORT: Kafka's + 30
    assert command["minio"][command["minio"].index("--address") + 1] == f"127.0.0.1:{LOCAL_PORTS['minio']}"
    # The S3 server's keys come from its environment, never its command line.
    assert not [arg for arg in command["minio"] if "footfall-local" in arg]
    assert command["kafka-broker-3"][-1] == str(tmp_path / "kafka-cluster-29092" / "node-3" / "server.properties")
    # Each Redis shard reads its port from the shard.conf `stack start redis-shards` writes, in its own directory.
    shard = command["redis-shard-3"]
    assert shard[1] == str(tmp_path / "redis-shard-3" / "shard.conf")
    assert shard[shard.index("--dir") + 1] == str(tmp_path / "redis-shard-3")
    # The same persistence as the stack's Redis: an append-only file fsync'd every second, no snapshots.
    persistence = ["--appendonly", "--appendfsync", "--save"]
    assert [shard[shard.index(o) + 1] for o in persistence] == [command["redis"][command["redis"].index(o) + 1]
                                                                for o in persistence]  # fmt: skip


def test_a_kafka_cluster_is_three_nodes_on_port_pairs(tmp_path: Path) -> None:
    """FOOTFALL_KAFKA_BROKERS=3: three nodes on consecutive port pairs, all in the bootstrap list."""
    env = {"FOOTFALL_STATE_DIR": str(tmp_path), "FOOTFALL_KAFKA_PORT": "29092", "FOOTFALL_KAFKA_BROKERS": "3"}
    cfg = StackConfig.from_env(env)
    kafka = make_service("kafka", cfg)
    assert isinstance(kafka, KafkaCluster)
    assert kafka.ports() == [29092, 29093, 29094, 29095, 29096, 29097]
    assert cfg.app_environment()["KAFKA_BOOTSTRAP_SERVERS"] == "127.0.0.1:29092,127.0.0.1:29094,127.0.0.1:29096"
    assert type(make_service("kafka", StackConfig.from_env({"FOOTFALL_STATE_DIR": str(tmp_path)}))) is Kafka


def test_redis_shards_are_three_servers_on_consecutive_ports(tmp_path: Path) -> None:
    """`stack start redis-shards`: one port each from FOOTFALL_REDIS_SHARDS_PORT, written where
    each shard's command reads it; the app is pointed at them only when asked to."""
    cfg = StackConfig.from_env({"FOOTFALL_STATE_DIR": str(tmp_path), "FOOTFALL_REDIS_SHARDS_PORT": "26380"})
    shards = make_service("redis-shards", cfg)
    assert shards.ports() == [26380, 26381, 26382]
    assert shards.programs() == ["redis-shard-3", "redis-shard-2", "redis-shard-1"]
    shards.prepare()
    assert [(tmp_path / f"redis-shard-{i}" / "shard.conf").read_text() for i in (1, 2, 3)] == [
        "port 26380\n", "port 26381\n", "port 26382\n"
    ]  # fmt: skip
    env = cfg.app_environment()
    assert env["FOOTFALL_REDIS_SHARD_URLS"] == ",".join(f"redis://127.0.0.1:{p}/0" for p in (26380, 26381, 26382))
    assert "FOOTFALL_REALTIME_REDIS_URLS" not in env  # sharding is opt-in: the default speed layer is REDIS_URL
    assert load_config(env, tmp_path).realtime_redis_urls == (env["REDIS_URL"],)
    sharded = load_config({**env, "FOOTFALL_REALTIME_REDIS_URLS": env["FOOTFALL_REDIS_SHARD_URLS"]}, tmp_path)
    assert len(sharded.realtime_redis_urls) == 3
    assert StackConfig.from_env({"FOOTFALL_STATE_DIR": str(tmp_path)}).redis_shard_ports == [16380, 16381, 16382]


@pytest.mark.parametrize(
    ("brokers", "clash", "message"),
    [("2", {}, "FOOTFALL_KAFKA_BROKERS: expected 1 or 3 (got 2)"), ("3", {"FOOTFALL_REDIS_PORT": "29095"}, "overlap")],
)
def test_a_kafka_cluster_refuses_two_brokers_and_port_clashes(
    brokers: str, clash: dict[str, str], message: str, tmp_path: Path
) -> None:
    env = {"FOOTFALL_STATE_DIR": str(tmp_path), "FOOTFALL_KAFKA_PORT": "29092", "FOOTFALL_KAFKA_BROKERS": brokers}
    with pytest.raises(StackError, match=re.escape(message)):
        StackConfig.from_env({**env, **clash})


# --- the client, on a supervisord of its own ---------------------------------------------------

PROGRAMS = {
    # Forks a child (in its own process group) and prints the child's pid.
    "forker": (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(600)\n"
    ),
    "stubborn": (
        "import signal, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print('ready', flush=True)\n"
        "time.sleep(600)\n"
    ),
    "failing": "print('bad config line 3', flush=True)\nraise SystemExit(3)\n",
}


def _conf(folder: Path, extra: dict[str, str]) -> Path:
    """A supervisord config laid out like the stack's, running ``PROGRAMS`` and ``extra``."""
    lines = [
        "[supervisord]",
        "logfile=%(ENV_FOOTFALL_STATE_DIR)s/logs/supervisord.log",
        "pidfile=%(ENV_FOOTFALL_STATE_DIR)s/run/supervisord.pid",
        "[unix_http_server]",
        "file=%(ENV_FOOTFALL_STATE_DIR)s/run/supervisor.sock",
        "[rpcinterface:supervisor]",
        "supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface",
    ]
    for name, code in {**PROGRAMS, **extra}.items():
        script = folder / f"{name}.py"
        script.write_text(code)
        lines += [
            f"[program:{name}]",
            f"command={sys.executable} {script}",
            "autostart=false\nautorestart=false\nstartsecs=0\nstopasgroup=true\nkillasgroup=true",
            "stopwaitsecs=1\nredirect_stderr=true",
            f"stdout_logfile=%(ENV_FOOTFALL_STATE_DIR)s/logs/{name}.log",
        ]
    conf = folder / "supervisord.conf"
    conf.write_text("\n".join(lines) + "\n")
    return conf


def _supervisor(folder: Path, extra: dict[str, str] | None = None) -> Supervisor:
    state = folder / "state"
    return Supervisor(state, {**os.environ, "FOOTFALL_STATE_DIR": str(state)}, _conf(folder, extra or {}))


@pytest.fixture
def supervisor(tmp_path: Path) -> Iterator[Supervisor]:
    sv = _supervisor(tmp_path)
    yield sv
    sv.shutdown()


def _last_line(log: Path) -> str:
    lines = log.read_text().strip().splitlines() if log.exists() else []
    return lines[-1] if lines else ""


def test_start_find_and_stop_leaves_no_process(supervisor: Supervisor) -> None:
    """A process and the child it forked are both gone after stop()."""
    pid = supervisor.start("forker")
    assert supervisor.pid("forker") == pid
    wait_until(lambda: _last_line(supervisor.log_file("forker")).isdigit(), 10, "child pid")
    child = int(_last_line(supervisor.log_file("forker")))
    assert _alive(child)
    assert supervisor.stop("forker") is True
    wait_until(lambda: not _alive(child), 5, "child gone")
    assert not _alive(pid)
    assert supervisor.pid("forker") is None
    assert supervisor.stop("forker") is False  # idempotent


def test_sigterm_ignoring_process_is_killed(supervisor: Supervisor) -> None:
    pid = supervisor.start("stubborn")
    wait_until(lambda: _last_line(supervisor.log_file("stubborn")) == "ready", 10, "handler installed")
    assert supervisor.stop("stubborn") is True
    assert not _alive(pid)


def test_kill_ends_the_process_at_once(supervisor: Supervisor) -> None:
    pid = supervisor.start("stubborn")
    assert supervisor.kill("stubborn") is True
    assert not _alive(pid)
    assert supervisor.pid("stubborn") is None
    assert supervisor.kill("stubborn") is False


def _peer(me: str, peer: str) -> str:
    """A node that on SIGTERM waits for its peer to be stopping too, like the last Kafka node
    waiting for a quorum; prints "clean" if it was, and exits."""
    return (
        "import os, signal, time\n"
        "state = os.environ['FOOTFALL_STATE_DIR']\n"
        "def stop(*_):\n"
        f"    open(f'{{state}}/{me}.mark', 'w').close()\n"
        "    deadline = time.time() + 30\n"
        f"    while not os.path.exists(f'{{state}}/{peer}.mark') and time.time() < deadline:\n"
        "        time.sleep(0.02)\n"
        "    print('clean', flush=True)\n"
        "    raise SystemExit(0)\n"
        "signal.signal(signal.SIGTERM, stop)\n"
        "print('ready', flush=True)\n"
        "while True:\n"
        "    time.sleep(1)\n"
    )


def test_stop_together_stops_peers_at_once(tmp_path: Path) -> None:
    """Nodes that wait for each other on SIGTERM all stop cleanly (one by one, the first would
    wait for its peer until SIGKILL)."""
    sv = _supervisor(tmp_path, {"node-a": _peer("node-a", "node-b"), "node-b": _peer("node-b", "node-a")})
    try:
        pids = [sv.start("node-a"), sv.start("node-b")]
        for name in ("node-a", "node-b"):
            wait_until(lambda name=name: _last_line(sv.log_file(name)) == "ready", 10, f"{name} ready")
        assert sv.stop_together(["node-b", "node-a", "forker"]) == [
            ("node-b", True),
            ("node-a", True),
            ("forker", False),
        ]
        assert [_last_line(sv.log_file(name)) for name in ("node-a", "node-b")] == ["clean", "clean"]
        assert not any(_alive(pid) for pid in pids)
    finally:
        sv.shutdown()


def test_an_early_exit_is_reported_with_the_log(supervisor: Supervisor) -> None:
    def start_and_wait() -> None:
        supervisor.start("failing")
        alive = lambda: supervisor.pid("failing") is not None  # noqa: E731
        wait_until(lambda: False, 10, "failing", alive=alive, log_file=supervisor.log_file("failing"))

    with pytest.raises(StackError, match=r"exited (at once|during start-up)(.|\n)*bad config line 3"):
        start_and_wait()


def test_an_unknown_process_is_a_clear_error(supervisor: Supervisor) -> None:
    with pytest.raises(StackError, match="no process 'nope'"):
        supervisor.start("nope")


def test_shutdown_stops_supervisord_and_every_process(supervisor: Supervisor) -> None:
    """What a plain `stack stop` ends with: nothing left running, supervisord included."""
    pids = [supervisor.start("forker"), supervisor.start("stubborn")]
    daemon = int(supervisor.pid_file.read_text())
    supervisor.shutdown()
    assert not supervisor.up()
    assert not any(_alive(pid) for pid in [*pids, daemon])
    assert supervisor.pid("forker") is None


def test_a_process_is_running_until_its_last_thread_exits(tmp_path: Path) -> None:
    """A main thread that exited alone leaves a zombie leader while its other threads run (and
    hold its ports), as a SIGKILLed JVM does for a moment: still running, and stop() ends it."""
    sys_exit = {"x86_64": 60, "aarch64": 93}.get(platform.machine())
    if sys_exit is None:
        pytest.skip(f"no exit syscall number for {platform.machine()}")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    code = (
        "import ctypes, socket, threading, time\n"
        f"sock = socket.socket(); sock.bind(('127.0.0.1', {port})); sock.listen()\n"
        "threading.Thread(target=time.sleep, args=(600,)).start()\n"
        f"ctypes.CDLL(None).syscall({sys_exit}, 0)  # exit the main thread only\n"
    )
    supervisor = _supervisor(tmp_path, {"half-exited": code})
    try:
        pid = supervisor.start("half-exited")
        leader_exited = lambda: Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"  # noqa: E731
        wait_until(leader_exited, 10, "leader exit")
        time.sleep(0.5)  # time for supervisord to notice, were it to
        assert supervisor.pid("half-exited") == pid
        with pytest.raises(StackError, match="already in use"):
            ensure_port_free(port, "half-exited", "PORT")
        assert supervisor.stop("half-exited") is True
        ensure_port_free(port, "half-exited", "PORT")
        assert supervisor.pid("half-exited") is None
    finally:
        supervisor.shutdown()


# --- ports and the stack's variables ------------------------------------------------------------


def test_taken_port_is_a_clear_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(StackError, match=f"port {port} is already in use.*FOOTFALL_REDIS_PORT=<port>"):
            ensure_port_free(port, "redis", "FOOTFALL_REDIS_PORT")


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"FOOTFALL_KAFKA_PORT": "kafka"}, "FOOTFALL_KAFKA_PORT: expected an integer"),
        ({"FOOTFALL_REDIS_PORT": "80"}, "FOOTFALL_REDIS_PORT: expected an integer between 1024 and 65535"),
        ({"FOOTFALL_MONGO_PORT": "19093"}, "ports overlap"),  # collides with Kafka's controller port
        ({"FOOTFALL_MINIO_PORT": "16379"}, "ports overlap"),  # Redis's
        ({"FOOTFALL_REDIS_SHARDS_PORT": "16378"}, "ports overlap"),  # the second shard would take Redis's
        ({"FOOTFALL_REDIS_SHARDS_PORT": "65534"}, "FOOTFALL_REDIS_SHARDS_PORT: expected an integer between"),
    ],
)
def test_stack_config_rejects_bad_ports(env: dict[str, str], message: str) -> None:
    with pytest.raises(StackError, match=message):
        StackConfig.from_env(env)


def test_stack_environment_points_the_app_at_the_stack(tmp_path: Path) -> None:
    cfg = StackConfig.from_env({"FOOTFALL_STATE_DIR": str(tmp_path), "FOOTFALL_KAFKA_PORT": "29092",
                                "FOOTFALL_WEB_PORT": "28000"})  # fmt: skip
    env = cfg.app_environment()
    assert env["KAFKA_BOOTSTRAP_SERVERS"] == "127.0.0.1:29092"
    assert env["FOOTFALL_DATA_DIR"] == str(tmp_path / "data")
    # Links in emails point at the stack's own web server, on whatever port it runs.
    assert load_config(env, tmp_path).public_url == "http://127.0.0.1:28000"
    # The S3 server is reachable, the archive stays local unless a test or the operator says otherwise.
    app = load_config({**env, "ARCHIVE_URL": f"s3://{env['FOOTFALL_S3_BUCKET']}/archive"}, tmp_path)
    assert app.archive_s3.endpoint == f"http://127.0.0.1:{LOCAL_PORTS['minio']}"
    assert "ARCHIVE_URL" not in env


def test_stack_asks_for_development_mode_itself(tmp_path: Path) -> None:
    """Development defaults are never implied: the stack's own variables alone start the app in local mode."""
    stack = StackConfig.from_env({"FOOTFALL_STATE_DIR": str(tmp_path)})
    app = load_config(stack.app_environment(), tmp_path)
    assert (app.environment, app.debug, app.trusted_proxies) == ("local", True, 0)
    # supervisord's processes too, whatever the shell that started the stack had set.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FOOTFALL_ENV", "production")
        assert stack.supervisor_environment()["FOOTFALL_ENV"] == "local"
