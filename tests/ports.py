"""A free TCP port for a server a test starts."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port on 127.0.0.1 nobody listens on right now (the kernel picks it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
