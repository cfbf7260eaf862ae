"""Local process management: start detached, find by pid file, stop the whole group."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from deploy.local.procs import ProcessSpec, StackError, ensure_port_free, running_pid, start, stop, wait_until
from deploy.local.services import StackConfig


def _spec(tmp_path: Path, code: str) -> ProcessSpec:
    return ProcessSpec("sleeper", [sys.executable, "-c", code], tmp_path / "run", tmp_path / "logs" / "sleeper.log")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_start_find_and_stop_leaves_no_process(tmp_path: Path) -> None:
    """A process and the child it forked are both gone after stop()."""
    code = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    spec = _spec(tmp_path, code)
    pid = start(spec)
    assert running_pid(spec) == pid
    wait_until(lambda: spec.log_file.read_text().strip().splitlines()[-1].isdigit(), 10, "child pid")
    child = int(spec.log_file.read_text().strip().splitlines()[-1])
    assert _alive(child)
    assert stop(spec, timeout=5) is True
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)
    assert not _alive(child)
    assert running_pid(spec) is None
    assert not spec.pid_file.exists()
    assert stop(spec) is False  # idempotent


def test_sigterm_ignoring_process_is_killed(tmp_path: Path) -> None:
    code = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(600)\n"
    spec = _spec(tmp_path, code)
    pid = start(spec)
    time.sleep(0.3)  # let it install the handler
    assert stop(spec, timeout=1) is True
    assert not _alive(pid)


def test_recycled_pid_is_not_ours(tmp_path: Path) -> None:
    """A pid file whose start time does not match the live process is ignored (never killed)."""
    spec = _spec(tmp_path, "")
    spec.run_dir.mkdir(parents=True)
    spec.pid_file.write_text(json.dumps({"pid": os.getpid(), "start_time": "1", "argv": []}))
    assert running_pid(spec) is None
    assert stop(spec) is False
    assert _alive(os.getpid())


def test_wait_until_reports_an_early_exit_with_the_log(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "print('bad config line 3'); raise SystemExit(3)")
    start(spec)
    with pytest.raises(StackError, match=r"exited during start-up(.|\n)*bad config line 3"):
        wait_until(lambda: False, 10, "sleeper", alive=lambda: running_pid(spec) is not None, log_file=spec.log_file)


def test_taken_port_is_a_clear_error() -> None:
    import socket

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
    ],
)
def test_stack_config_rejects_bad_ports(env: dict[str, str], message: str) -> None:
    with pytest.raises(StackError, match=message):
        StackConfig.from_env(env)


def test_stack_environment_points_the_app_at_the_stack(tmp_path: Path) -> None:
    cfg = StackConfig.from_env({"FOOTFALL_STATE_DIR": str(tmp_path), "FOOTFALL_KAFKA_PORT": "29092"})
    env = cfg.app_environment()
    assert env["KAFKA_BOOTSTRAP_SERVERS"] == "127.0.0.1:29092"
    assert env["FOOTFALL_DATA_DIR"] == str(tmp_path / "data")


def test_a_process_is_running_until_its_last_thread_exits(tmp_path: Path) -> None:
    """A main thread that exited alone leaves a zombie leader while its other threads run (and
    hold its ports), as a SIGKILLed JVM does for a moment: still running, and stop() ends it."""
    import platform
    import socket

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
    spec = _spec(tmp_path, code)
    pid = start(spec)
    wait_until(lambda: Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z", 10, "leader exit")
    assert running_pid(spec) == pid
    with pytest.raises(StackError, match="already in use"):
        ensure_port_free(port, "sleeper", "PORT")
    assert stop(spec, timeout=1) is True
    ensure_port_free(port, "sleeper", "PORT")
    assert running_pid(spec) is None
