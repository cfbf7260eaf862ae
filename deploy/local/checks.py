"""What the stack's commands share: the error they raise, waiting for health, port checks."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from pathlib import Path


class StackError(RuntimeError):
    """A local service could not be installed, started, checked or stopped; says why."""


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
            raise StackError(f"{what}: the process exited during start-up{log_hint(log_file)}")
        time.sleep(0.25)
    raise StackError(f"{what}: not healthy after {timeout:.0f}s{log_hint(log_file)}")


def log_hint(log_file: Path | None) -> str:
    """The last lines of ``log_file``, to append to an error message ("" if there is none)."""
    if log_file is None or not log_file.exists():
        return ""
    tail = log_file.read_text(errors="replace").splitlines()[-15:]
    return f"\n  log: {log_file}\n  last lines:\n    " + "\n    ".join(tail)


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
