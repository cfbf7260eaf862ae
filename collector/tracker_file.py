"""The built browser tracker as the collector serves it: its bytes, gzipped, and its SRI hash.

The readable source is ``collector/tracker/footfall.js``; ``python -m deploy.build_tracker``
(run by ``deploy/local/bootstrap.sh``, so by up.sh and test.sh, and by the wheel build)
minifies it into ``collector/static/collector/footfall.min.js``, the one file served, gzipped
and hashed here. The snippet's ``integrity`` is the hash of exactly these bytes.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

BUILT = Path(__file__).resolve().parent / "static" / "collector" / "footfall.min.js"


class TrackerNotBuilt(RuntimeError):
    """The minified tracker is missing: the checkout was never built."""


@dataclass(frozen=True)
class Tracker:
    body: bytes
    gzipped: bytes  # served to clients that accept gzip: the size every tracked page pays
    integrity: str  # the Subresource Integrity value of ``body``: "sha384-…"
    etag: str


@cache
def built_tracker() -> Tracker:
    """The built tracker, read once per process."""
    try:
        body = BUILT.read_bytes()
    except FileNotFoundError:
        raise TrackerNotBuilt(f"{BUILT} is missing: build it with `python -m deploy.build_tracker`") from None
    digest = hashlib.sha384(body).digest()
    return Tracker(
        body=body,
        gzipped=gzip.compress(body, compresslevel=9, mtime=0),  # mtime 0: the same bytes every start
        integrity="sha384-" + base64.b64encode(digest).decode(),
        etag='"' + digest[:12].hex() + '"',
    )
