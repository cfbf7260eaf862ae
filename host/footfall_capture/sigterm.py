"""Spool what the middleware holds in memory when a SIGTERM that nobody handles stops the host.

A server that handles SIGTERM itself (gunicorn, uWSGI, Celery) turns it into an orderly exit,
and the middleware's exit hooks spool what is unsent. With no handler (``manage.py runserver``,
a bare WSGI server) the signal kills the process on the spot and events in memory are lost: for
such a process only, :func:`flush_on_sigterm` installs a handler that flushes first and then
lets the signal end the process exactly as it would have.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from types import FrameType


def flush_on_sigterm(flush: Callable[[], None]) -> bool:
    """On SIGTERM run ``flush``, then die of the signal; only where SIGTERM has no handler yet
    (``SIG_DFL``) and on the main thread (where Python allows handlers). Whether it installed one."""
    if threading.current_thread() is not threading.main_thread():
        return False
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:  # the server's own, or one set outside Python
        return False

    def handler(signum: int, frame: FrameType | None) -> None:
        try:
            flush()
        finally:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)

    signal.signal(signal.SIGTERM, handler)
    return True
