"""gunicorn's logger with the request's secrets cut out of each access-log line (footfall.redact)."""

from __future__ import annotations

from typing import Any

from gunicorn.glogging import Logger

from footfall.redact import redact

# The atoms that hold the request's URL or another page's: request line, path, query, referrer.
_URL_ATOMS = ("r", "U", "q", "f")


class RedactingLogger(Logger):
    """Access-log lines as gunicorn writes them, their tokens replaced by ``[redacted]``."""

    def atoms(self, resp: Any, req: Any, environ: dict[str, Any], request_time: Any) -> dict[str, Any]:
        atoms = super().atoms(resp, req, environ, request_time)
        for name in _URL_ATOMS:
            if isinstance(atoms.get(name), str):
                atoms[name] = redact(atoms[name])
        return atoms
