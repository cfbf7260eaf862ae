"""Secrets that travel in URLs, cut out of any text about a request before it is logged.

A share link (``/dashboard/share/<token>``) and an unsubscribe link (``/alerts/unsubscribe/<token>``)
carry their credential in the path; an API key or token may be sent as a query parameter by
mistake. :func:`redact` replaces each with ``[redacted]``, leaving the rest of the line (the
route, the status) for whoever reads the log.
"""

from __future__ import annotations

import re

_SECRET_PATH = re.compile(r"(/dashboard/share/|/alerts/unsubscribe/)[^/?#\s\"]+")
_SECRET_QUERY = re.compile(r"([?&](?:token|key|api_key|secret|signature)=)[^&#\s\"]+", re.IGNORECASE)
REDACTED = "[redacted]"


def redact(text: str) -> str:
    """``text`` with the tokens of share and unsubscribe paths and secret-named query values cut out."""
    return _SECRET_QUERY.sub(rf"\g<1>{REDACTED}", _SECRET_PATH.sub(rf"\g<1>{REDACTED}", text))
