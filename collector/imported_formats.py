"""Rows of other products' exports, and of Footfall's own, as importable records: pure.

* **Umami** ``website_event`` (CSV of the table): ``event_id, website_id, session_id,
  created_at, hostname, url_path, url_query, page_title, referrer_domain, referrer_path,
  referrer_query, event_type`` (1 page view, 2 custom event), ``event_name``; the ``utm_*``
  columns are read from ``url_query``. Its own event id is kept; the visitor is its
  ``session_id`` (hashed with the site). It has no browser, OS, device or country (those are
  in Umami's ``session`` table): imported events have none.
* **GoatCounter** CSV export, version 2 (header ``2Path,Title,Event,UserAgent,Browser,System,
  Session,Bot,Referrer,Referrer scheme,Screen size,Location,FirstVisit,Date``). Its page views
  carry a session id, which stands for the visitor (GoatCounter has no per-visitor id: a
  visitor with two sessions in a day counts twice); an event row (``Event`` true) becomes a
  custom event named by its path. The id is derived from the row, so a second import of the
  same file counts once.
* **Footfall's export** (docs/leaving.md): every field as exported, the event id included.

Records from these keep what the source worked out (browser, OS, device, bot flag, country,
visitor) instead of re-deriving it from an address and a User-Agent they do not have
(:data:`~footfall_capture.enrich.steps.IMPORTED_STEPS`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections.abc import Mapping

import msgspec

from collector.beacon import Beacon
from collector.importing import Given, Record, line_event_id
from footfall_capture.events import COUNTRY, UserAgent

UMAMI_COLUMNS = ("event_id", "website_id", "session_id", "created_at", "url_path", "event_type")
GOATCOUNTER_COLUMNS = ("2Path", "Title", "Event", "Browser", "System", "Session", "Bot", "Referrer",
                       "Referrer scheme", "Location", "Date")  # fmt: skip
EXPORT_COLUMNS = ("site_id", "event_id", "type", "ts")
_DEVICES = frozenset({"desktop", "mobile", "tablet", "bot", "other"})
_NOT_IN_A_NAME = re.compile(r"[^A-Za-z0-9_.:-]+")


class BadRow(ValueError):
    """A row that cannot be imported: ``column`` names the field at fault (None: the row)."""

    def __init__(self, column: str | None, message: str) -> None:
        super().__init__(message)
        self.column = column


def missing_columns(header: list[str] | tuple[str, ...], required: tuple[str, ...]) -> list[str]:
    return [name for name in required if name not in header]


def _visitor(site_id: str, source: str, session: str) -> str:
    """A 32-hex visitor id for a source's session id, per site (the id itself never leaves here)."""
    return hashlib.blake2b(f"{source}\0{site_id}\0{session}".encode(), digest_size=16).hexdigest()


def _time(value: str, column: str) -> int:
    text = (value or "").strip()
    try:
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise BadRow(column, f"not a date and time: {text[:40]!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)  # Umami stores UTC without a zone
    return int(moment.timestamp() * 1000)


def _beacon(fields: dict[str, object]) -> Beacon:
    try:
        return msgspec.convert({k: v for k, v in fields.items() if v not in (None, "")}, Beacon)
    except msgspec.ValidationError as exc:
        raise BadRow(None, str(exc)) from None


def parse_umami(row: Mapping[str, str], site_id: str) -> Record:
    """One ``website_event`` row."""
    host = (row.get("hostname") or "").strip()
    if not host:
        raise BadRow("hostname", "empty: the page's host is needed for its URL")
    query = (row.get("url_query") or "").strip()
    url = f"https://{host}{row.get('url_path') or '/'}" + (f"?{query}" if query else "")
    kind = (row.get("event_type") or "").strip()
    if kind not in ("1", "2"):
        raise BadRow("event_type", f"{kind!r}: 1 (page view) or 2 (custom event)")
    name = (row.get("event_name") or "").strip()
    if kind == "2" and not name:
        raise BadRow("event_name", "empty for a custom event (event_type 2)")
    ref_domain = (row.get("referrer_domain") or "").strip()
    referrer = None
    if ref_domain:
        ref_query = (row.get("referrer_query") or "").strip()
        referrer = f"https://{ref_domain}{row.get('referrer_path') or '/'}" + (f"?{ref_query}" if ref_query else "")
    session = (row.get("session_id") or "").strip()
    if not session:
        raise BadRow("session_id", "empty")
    event_id = (row.get("event_id") or "").strip().lower()
    beacon = _beacon({
        "site_id": site_id, "type": "pageview" if kind == "1" else name, "url": url, "referrer": referrer,
        "title": row.get("page_title"), "ts": _time(row.get("created_at", ""), "created_at"),
        "event_id": event_id, "visitor_id": _visitor(site_id, "umami", session),
    })  # fmt: skip
    return Record(beacon, None, "", Given(None, None))


def parse_goatcounter(row: Mapping[str, str], site_id: str, base_url: str, line: str) -> Record:
    """One row of GoatCounter's CSV export (version 2); ``line`` is the row as read, for its id."""
    path = (row.get("2Path") or "").strip()
    if not path:
        raise BadRow("2Path", "empty")
    event = (row.get("Event") or "").strip().lower() == "true"
    referrer = (row.get("Referrer") or "").strip()
    if referrer and (row.get("Referrer scheme") or "").strip() != "h":  # a name ("Hacker News") or campaign
        referrer = ""
    elif referrer and "://" not in referrer:
        referrer = "https://" + referrer
    country = (row.get("Location") or "").strip().split("-")[0].upper() or None
    if country is not None and not COUNTRY.fullmatch(country):
        raise BadRow("Location", f"{country!r} is not an ISO 3166 country code")
    bot = (row.get("Bot") or "0").strip() not in ("", "0")
    browser = (row.get("Browser") or "").strip()
    system = (row.get("System") or "").strip()
    ua = UserAgent(
        browser=browser.rsplit(" ", 1)[0] if browser else None,
        browser_version=browser.rsplit(" ", 1)[1] if " " in browser else None,
        os=system.rsplit(" ", 1)[0] if " " in system else system or None,
        device="bot" if bot else None, is_bot=bot,
    )  # fmt: skip
    session = (row.get("Session") or "").strip()
    # An event's name is its path; Footfall's names hold letters, digits and _ . : - only.
    name = _NOT_IN_A_NAME.sub("-", path).strip("-")[:64] or "event"
    beacon = _beacon({
        "site_id": site_id, "type": name if event else "pageview",
        "url": None if event else base_url.rstrip("/") + ("" if path.startswith("/") else "/") + path,
        "referrer": referrer or None, "title": row.get("Title"), "ts": _time(row.get("Date", ""), "Date"),
        "event_id": line_event_id(site_id, line),
        "visitor_id": _visitor(site_id, "goatcounter", session) if session else None,
    })  # fmt: skip
    return Record(beacon, None, "", Given(ua, country))


def parse_export_row(row: Mapping[str, object], site_id: str) -> Record:
    """One row of a Footfall export (Parquet or CSV; CSV's cells are text)."""

    def text(name: str) -> str | None:
        value = row.get(name)
        return None if value is None or value == "" else str(value)

    def number(name: str) -> int | None:
        value = text(name)
        try:
            return None if value is None else int(value)
        except ValueError:
            raise BadRow(name, f"{value[:40]!r} is not a whole number") from None

    props = text("props")
    try:
        decoded = json.loads(props) if props else None
    except ValueError:
        raise BadRow("props", "not a JSON object") from None
    device = text("ua_device")
    if device is not None and device not in _DEVICES:
        raise BadRow("ua_device", f"{device!r}: one of {', '.join(sorted(_DEVICES))}")
    is_bot = text("is_bot") in ("true", "True", "1")
    ua = None
    if any(text(c) for c in ("ua_browser", "ua_os", "ua_device")) or is_bot:
        ua = UserAgent(browser=text("ua_browser"), os=text("ua_os"), device=device, is_bot=is_bot)
    country = text("country")
    if country is not None and not COUNTRY.fullmatch(country):
        raise BadRow("country", f"{country!r} is not an ISO 3166 country code")
    if number("ts") is None:
        raise BadRow("ts", "empty")
    beacon = _beacon({
        "site_id": site_id, "type": text("type"), "url": text("url"), "referrer": text("referrer"),
        "title": text("title"), "ts": number("ts"), "event_id": text("event_id"), "props": decoded,
        "visitor_id": text("visitor_id"), "method": text("method"), "status": number("status"),
        "duration_ms": float(text("duration_ms")) if text("duration_ms") else None,
    })  # fmt: skip
    return Record(beacon, None, "", Given(ua, country))


def flatten_event(event: Mapping[str, object]) -> dict[str, object]:
    """An event as it was on the log (a JSON lines export's line) as an export row."""
    ua = event.get("ua") if isinstance(event.get("ua"), dict) else {}
    utm = event.get("utm") if isinstance(event.get("utm"), dict) else {}
    props = event.get("props")
    return {**event, "ua_browser": ua.get("browser"), "ua_os": ua.get("os"), "ua_device": ua.get("device"),
            "is_bot": "true" if ua.get("is_bot") else "", **{f"utm_{k}": v for k, v in utm.items()},
            "props": json.dumps(props) if props else None}  # fmt: skip
