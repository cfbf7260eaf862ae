"""A client of the stack's supervisord: one per state directory, running the programs that
``deploy/local/supervisord.conf`` declares.

supervisord starts, watches and stops the processes (each in its own process group, stopped
as a group); this module starts supervisord itself when a process is wanted, asks it for
states and pids over its XML-RPC socket, and shuts it down when the whole stack stops.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import xmlrpc.client
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from supervisor.xmlrpc import Faults, SupervisorTransport

from deploy.local.checks import StackError, log_hint, wait_until

CONF = Path(__file__).resolve().parent / "supervisord.conf"
# supervisord's process states that have a live process (supervisor.states.ProcessStates).
_LIVE_STATES = {"STARTING", "RUNNING", "STOPPING"}
_SOCKET_PATH_MAX = 107  # sun_path of a Unix socket address, less the final NUL


class Supervisor:
    """The supervisord of ``state_dir``, started with ``environment`` (which the config's
    ``%(ENV_…)s`` read) and ``conf``; socket, pid file and logs live under ``state_dir``."""

    def __init__(self, state_dir: Path, environment: Mapping[str, str], conf: Path = CONF) -> None:
        self.state_dir = state_dir
        self.environment = dict(environment)
        self.conf = conf

    @property
    def socket(self) -> Path:
        return self.state_dir / "run" / "supervisor.sock"

    @property
    def pid_file(self) -> Path:
        return self.state_dir / "run" / "supervisord.pid"

    def log_file(self, name: str) -> Path:
        """Where the config sends process ``name``'s output."""
        return self.state_dir / "logs" / f"{name}.log"

    def _rpc(self) -> Any:
        transport = SupervisorTransport(None, None, f"unix://{self.socket}")
        return xmlrpc.client.ServerProxy("http://127.0.0.1", transport=transport).supervisor

    def up(self) -> bool:
        """True if this state directory's supervisord answers on its socket."""
        if not self.socket.exists():
            return False
        try:
            return self._rpc().getState()["statename"] == "RUNNING"
        except (OSError, xmlrpc.client.Error):
            return False

    def _processes(self) -> list[dict[str, Any]]:
        return self._rpc().getAllProcessInfo() if self.up() else []

    def _info(self, name: str) -> dict[str, Any] | None:
        return next((info for info in self._processes() if info["name"] == name), None)

    def pid(self, name: str) -> int | None:
        """The pid of process ``name`` while it runs, else None (also when supervisord is down)."""
        info = self._info(name)
        if info is None or info["statename"] not in _LIVE_STATES or not info["pid"]:
            return None
        return int(info["pid"])

    def ensure_up(self) -> None:
        """Start supervisord unless it runs; one that runs nothing is started afresh, so the
        processes get the environment of the command that starts them."""
        if self.up():
            if any(info["statename"] in _LIVE_STATES for info in self._processes()):
                return
            self.shutdown()
        if len(str(self.socket)) > _SOCKET_PATH_MAX:
            raise StackError(f"supervisord: socket path {self.socket} is too long; choose a shorter FOOTFALL_STATE_DIR")
        for folder in ("run", "logs"):
            (self.state_dir / folder).mkdir(parents=True, exist_ok=True)
        # It forks into the background once its socket listens, so the socket answers on return.
        out = subprocess.run(
            [sys.executable, "-m", "supervisor.supervisord", "-c", str(self.conf)],
            env=self.environment, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        if out.returncode != 0 and not self.up():
            raise StackError(f"supervisord did not start: {(out.stderr or out.stdout).strip()[-2000:]}")
        wait_until(self.up, 30, "supervisord", log_file=self.state_dir / "logs" / "supervisord.log")

    def start(self, name: str) -> int:
        """Start process ``name`` (supervisord first, if needed); return its pid."""
        self.ensure_up()
        info = self._info(name)
        if info is None:
            raise StackError(f"supervisord: no process {name!r} in {self.conf}")
        try:
            self._rpc().startProcess(f"{info['group']}:{name}", True)
        except xmlrpc.client.Fault as exc:
            if exc.faultCode != Faults.ALREADY_STARTED:
                why = f"supervisord could not start it ({exc.faultString})"
                raise StackError(f"{name}: {why}{log_hint(self.log_file(name))}") from exc
        pid = self.pid(name)
        if pid is None:
            raise StackError(f"{name}: the process exited at once{log_hint(self.log_file(name))}")
        return pid

    def stop(self, name: str) -> bool:
        """Stop process ``name``'s group (SIGTERM, SIGKILL after the config's stopwaitsecs);
        True if it was running."""
        info = self._info(name)
        pid = self.pid(name)
        if info is None or pid is None:
            return False
        with contextlib.suppress(xmlrpc.client.Fault):  # it ended meanwhile
            self._rpc().stopProcess(f"{info['group']}:{name}", True)
        # Children that ignored SIGTERM but share the group get the same end.
        _kill_group(pid)
        return True

    def stop_together(self, names: list[str], timeout: float = 120) -> list[tuple[str, bool]]:
        """Stop processes ``names`` at the same time (SIGTERM to each, then wait for all): the
        nodes of a cluster, whose last one would otherwise wait out its stop timeout for peers
        already gone. Each name and whether it was running."""
        running = {name: (info, pid) for name in names if (info := self._info(name)) and (pid := self.pid(name))}
        for name, (info, _) in running.items():
            with contextlib.suppress(xmlrpc.client.Fault):  # it ended meanwhile
                self._rpc().stopProcess(f"{info['group']}:{name}", False)
        for name, (_, pid) in running.items():
            with contextlib.suppress(StackError):  # supervisord sends SIGKILL after stopwaitsecs
                wait_until(lambda name=name, pid=pid: self.pid(name) != pid, timeout, f"{name} stopping")
            _kill_group(pid)
        return [(name, name in running) for name in names]

    def kill(self, name: str) -> bool:
        """SIGKILL process ``name``'s group at once (fault injection); True if it was running.
        Returns once supervisord has seen it end (a JVM's last thread included)."""
        pid = self.pid(name)
        if pid is None:
            return False
        _kill_group(pid)
        with contextlib.suppress(StackError):
            wait_until(lambda: self.pid(name) != pid, 10, f"{name} after SIGKILL")
        return True

    def shutdown(self) -> None:
        """Stop every process and supervisord itself; return once supervisord has exited."""
        if not self.up():
            return
        try:
            daemon = int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            daemon = None
        with contextlib.suppress(OSError, xmlrpc.client.Error):
            self._rpc().shutdown()
        deadline = time.monotonic() + 120
        while daemon is not None and _alive(daemon) and time.monotonic() < deadline:
            time.sleep(0.1)
        if daemon is not None and _alive(daemon):
            raise StackError(f"supervisord (pid {daemon}) did not exit")


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (an exited process its parent has not reaped yet does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
