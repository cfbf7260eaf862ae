"""Parse historical traffic for backfills: JSON lines of beacons, or web-server access logs.

Pure functions; the ``import_events`` command feeds what they return to the same ingestor
as live traffic. Each record gets a deterministic ``event_id`` derived from the site and
the raw line, so importing the same file twice counts every line once downstream.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from dataclasses import dataclass

import msgspec

from collector.beacon import BadBeacon, Beacon
from footfall_capture.events import UserAgent

# Apache/nginx "combined": host ident user [time] "request" status bytes "referer" "agent"
COMBINED = re.compile(
    r'^(?P<ip>\S+) \S+ \S+ \[(?P<time>[^\]]+)\] "(?P<request>[^"]*)" (?P<status>\d{3}) \S+'
    r'(?: "(?P<referrer>[^"]*)" "(?P<agent>[^"]*)")?'
)
STATIC_SUFFIXES = (
    ".css", ".js", ".mjs", ".map", ".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".avif", ".ico",
    ".woff", ".woff2", ".ttf", ".eot", ".mp4", ".webm", ".mp3", ".pdf", ".zip", ".xml", ".txt", ".json",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Given:
    """What an export's source worked out already (browser, OS, device, bot flag; country),
    kept as it is rather than derived again from an address and a User-Agent it lacks."""

    ua: UserAgent | None
    country: str | None


@dataclass(frozen=True, slots=True)
class Record:
    """One importable event: the beacon, and the client facts the log kept (or, from an
    export, what its source worked out: ``given``)."""

    beacon: Beacon
    ip: str | None
    user_agent: str
    given: Given | None = None


def line_event_id(site_id: str, line: str) -> str:
    """A stable UUID-shaped id for a line of a given site (version nibble 8: custom)."""
    digest = bytearray(hashlib.blake2b(f"{site_id}\0{line}".encode(), digest_size=16).digest())
    digest[6] = (digest[6] & 0x0F) | 0x80
    digest[8] = (digest[8] & 0x3F) | 0x80
    h = digest.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def parse_jsonl(line: str, site_id: str) -> Record | None:
    """A JSON object per line (the beacon fields plus ``ts``, ``ip``, ``user_agent``)."""
    if not line.strip():
        return None
    try:
        beacon = msgspec.json.decode(line, type=Beacon)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise BadBeacon("invalid_line", str(exc)) from None
    if beacon.site_id != site_id:
        raise BadBeacon("site_mismatch", f"line is for {beacon.site_id!r}, importing {site_id!r}")
    if beacon.ts is None:
        raise BadBeacon("invalid_line", "imported events need `ts` (ms since the epoch, UTC)")
    if beacon.event_id is None:
        beacon = msgspec.structs.replace(beacon, event_id=line_event_id(site_id, line))
    return Record(beacon, beacon.ip, beacon.user_agent or "")


def parse_combined(line: str, site_id: str, base_url: str, all_requests: bool = False) -> Record | None:
    """One access-log line; None for lines that are not a page view (assets, errors, POSTs)
    unless ``all_requests`` records every request with its method and status."""
    match = COMBINED.match(line.strip())
    if match is None:
        raise BadBeacon("invalid_line", "not in combined log format")
    try:
        method, target, _ = match["request"].split(" ", 2)
    except ValueError:
        raise BadBeacon("invalid_line", f"unparsable request {match['request'][:80]!r}") from None
    status = int(match["status"])
    if not target.startswith("/"):
        raise BadBeacon("invalid_line", f"request target {target[:80]!r} is not a path")
    try:
        ts = int(dt.datetime.strptime(match["time"], "%d/%b/%Y:%H:%M:%S %z").timestamp() * 1000)
    except ValueError:
        raise BadBeacon("invalid_line", f"unparsable time {match['time']!r}") from None
    path = target.split("?", 1)[0].lower()
    is_page = method == "GET" and 200 <= status < 300 and not path.endswith(STATIC_SUFFIXES)
    if not is_page and not all_requests:
        return None
    referrer = match["referrer"] if match["referrer"] not in (None, "", "-") else None
    fields: dict[str, object] = {
        "site_id": site_id,
        "type": "pageview" if is_page else "request",
        "url": base_url.rstrip("/") + target,
        "referrer": referrer,
        "event_id": line_event_id(site_id, line),
        "ts": ts,
    }
    if not is_page:
        fields |= {"method": method, "status": status}
    try:
        beacon = msgspec.convert(fields, Beacon)
    except msgspec.ValidationError as exc:
        raise BadBeacon("invalid_line", str(exc)) from None
    return Record(beacon, match["ip"], match["agent"] or "")
