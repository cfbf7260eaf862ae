"""Start, watch and stop long-running local processes by pid file (stdlib only).

Every process is started in its own session (process group), so stopping it also stops
whatever it forked (a JVM's children, a shell wrapper). A pid file records the pid and
the process's start time read from /proc, so a recycled pid is never mistaken for ours
and never killed.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path


class StackError(RuntimeError):
    """A local service could not be installed, started, checked or stopped; says why."""


@dataclass(frozen=True)
class ProcessSpec:
    """How to run one service process and where its files go."""

    name: str
    argv: Sequence[str]
    run_dir: Path  # holds <name>.pid
    log_file: Path
    env: dict[str, str] | None = None
    cwd: Path | None = None

    @property
    def pid_file(self) -> Path:
        return self.run_dir / f"{self.name}.pid"


def _start_time(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (field 22 of /proc/<pid>/stat), or None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may contain spaces and parentheses; split after the last ')'.
    fields = stat.rsplit(")", 1)[1].split()
    # A zombie has exited and only its exit status is left to reap -- unless it is a thread
    # group's leader whose other threads still run: a SIGKILLed JVM's main thread is a zombie
    # at once while its other threads exit (or, after a plain exit of the main thread, run
    # on), holding its files and ports. Field 20 counts the threads.
    if fields[0] == "Z" and int(fields[17]) <= 1:
        return None
    return fields[19]


def running_pid(spec: ProcessSpec) -> int | None:
    """The pid of the process ``spec`` started, if it is still alive (and really ours)."""
    try:
        record = json.loads(spec.pid_file.read_text())
    except (OSError, ValueError):
        return None
    pid = int(record["pid"])
    if _start_time(pid) != record.get("start_time"):
        return None
    return pid


def start(spec: ProcessSpec) -> int:
    """Start ``spec`` detached, appending its output to its log file; return its pid."""
    spec.run_dir.mkdir(parents=True, exist_ok=True)
    spec.log_file.parent.mkdir(parents=True, exist_ok=True)
    with spec.log_file.open("ab") as log:
        log.write(f"\n===== {time.strftime('%Y-%m-%d %H:%M:%S')} starting {spec.name}\n".encode())
        log.flush()
        proc = subprocess.Popen(
            list(spec.argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=spec.env,
            cwd=spec.cwd,
            start_new_session=True,
        )
    record = {"pid": proc.pid, "start_time": _start_time(proc.pid), "argv": list(spec.argv)}
    spec.pid_file.write_text(json.dumps(record))
    return proc.pid


def wait_until(
    check: Callable[[], bool],
    timeout: float,
    what: str,
    alive: Callable[[], bool] = lambda: True,
    log_file: Path | None = None,
) -> None:
    """Poll ``check`` until it is true; raise :class:`StackError` on timeout or early exit."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        if not alive():
            raise StackError(f"{what}: the process exited during start-up{_log_hint(log_file)}")
        time.sleep(0.25)
    raise StackError(f"{what}: not healthy after {timeout:.0f}s{_log_hint(log_file)}")


def _log_hint(log_file: Path | None) -> str:
    if log_file is None or not log_file.exists():
        return ""
    tail = log_file.read_text(errors="replace").splitlines()[-15:]
    return f"\n  log: {log_file}\n  last lines:\n    " + "\n    ".join(tail)


def stop(spec: ProcessSpec, timeout: float = 30.0) -> bool:
    """Stop ``spec``'s process group: SIGTERM, then SIGKILL after ``timeout`` seconds.

    Returns True if something was running. Raises :class:`StackError` if a process
    survives SIGKILL (which would leave a port taken for the next start).
    """
    pid = running_pid(spec)
    if pid is None:
        spec.pid_file.unlink(missing_ok=True)
        return False
    _signal_group(pid, signal.SIGTERM)
    if not _wait_gone(pid, timeout):
        _signal_group(pid, signal.SIGKILL)
        if not _wait_gone(pid, 10.0):
            raise StackError(f"{spec.name}: pid {pid} survived SIGKILL")
    # Children that ignored SIGTERM but share the group get the same end.
    _signal_group(pid, signal.SIGKILL)
    spec.pid_file.unlink(missing_ok=True)
    return True


def kill(spec: ProcessSpec) -> bool:
    """SIGKILL ``spec``'s process group at once (fault injection); True if it was running."""
    pid = running_pid(spec)
    if pid is None:
        return False
    _signal_group(pid, signal.SIGKILL)
    _wait_gone(pid, 10.0)
    return True


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # reap if it is our child, else no-op
        if _start_time(pid) is None:
            return True
        time.sleep(0.1)
    return False


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    """True if something accepts TCP connections on ``host:port``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def ensure_port_free(port: int, service: str, variable: str) -> None:
    """Raise a clear error if another program already listens on ``port``."""
    if port_open(port):
        raise StackError(
            f"{service}: port {port} is already in use by another program; "
            f"stop it or choose another port with {variable}=<port>"
        )
