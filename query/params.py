"""Query parameters of the API, parsed and validated: pure, no I/O.

Everything a client sends is checked against a fixed vocabulary here, before any store is
touched: metric, interval and dimension names are looked up in tables, filter values are
plain strings compared for equality, numbers are bounded. Nothing a client sends ever
becomes a Mongo operator, a field name or a Redis key pattern. Errors name the parameter.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from footfall.vocabulary import API_DIMENSIONS, FILTER_DIMENSIONS, REFPAGE_SEPARATOR, QueryError
from query.plan import floor

# Longest range per interval: bounds the number of buckets and store keys a query touches.
MAX_SPAN = {"minute": dt.timedelta(days=2), "hour": dt.timedelta(days=93), "day": dt.timedelta(days=3 * 366)}
MAX_RANGE = dt.timedelta(days=3 * 366)
DEFAULT_SPAN = {"minute": dt.timedelta(hours=1), "hour": dt.timedelta(days=2), "day": dt.timedelta(days=30)}
MAX_LIMIT = 1000
MAX_VALUE_LENGTH = 2048
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@dataclass(frozen=True, slots=True)
class Filter:
    dimension: str  # the stores' name (e.g. "page")
    value: str


@dataclass(frozen=True, slots=True)
class Range:
    start: dt.datetime
    end: dt.datetime
    tz: ZoneInfo


def parse_tz(raw: str | None, site_tz: str) -> ZoneInfo:
    name = raw or site_tz
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise QueryError("tz", "must be an IANA time zone name such as Europe/Berlin") from None


def parse_instant(raw: str, tz: ZoneInfo, parameter: str) -> dt.datetime:
    """``YYYY-MM-DD`` (midnight in ``tz``) or an ISO 8601 date-time (without an offset: in ``tz``)."""
    if len(raw) > 40:
        raise QueryError(parameter, "must be an ISO 8601 date or date-time")
    try:
        if _DATE.match(raw):
            return dt.datetime.combine(dt.date.fromisoformat(raw), dt.time(), tz)
        moment = dt.datetime.fromisoformat(raw)
    except ValueError:
        raise QueryError(
            parameter, "must be an ISO 8601 date or date-time, e.g. 2026-11-01 or 2026-11-01T10:00:00Z"
        ) from None
    return moment.replace(tzinfo=tz) if moment.tzinfo is None else moment.astimezone(tz)


def parse_range(
    params: Mapping[str, str], site_tz: str, now: dt.datetime, default_span: dt.timedelta, max_span: dt.timedelta
) -> Range:
    """``from``/``to``/``tz`` as a half-open range; defaults: ``to`` now, ``from`` = ``to`` - span.

    Both ends are snapped to whole minutes, the resolution of the realtime counters."""
    tz = parse_tz(params.get("tz"), site_tz)
    end = parse_instant(params["to"], tz, "to") if params.get("to") else now.astimezone(tz)
    start = parse_instant(params["from"], tz, "from") if params.get("from") else end - default_span
    start, end = floor(start, "minute", tz), _ceil_minute(end, tz)
    if end <= start:
        raise QueryError("to", "must be after from")
    if end - start > max_span:
        raise QueryError("from", f"the range may span at most {max_span.days} days for this query")
    if start.year < 2000 or end > now + dt.timedelta(days=366):
        raise QueryError("from" if start.year < 2000 else "to", "is outside the supported time range")
    return Range(start, end, tz)


def _ceil_minute(moment: dt.datetime, tz: ZoneInfo) -> dt.datetime:
    floored = floor(moment, "minute", tz)
    return floored if floored == moment else floored + dt.timedelta(minutes=1)


def choice(params: Mapping[str, str], name: str, allowed: tuple[str, ...], default: str) -> str:
    value = params.get(name) or default
    if value not in allowed:
        raise QueryError(name, f"must be one of {', '.join(allowed)}")
    return value


def bounded_int(params: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    raw = params.get(name)
    if raw in (None, ""):
        return default
    if not raw.isdigit() or len(raw) > 9 or not low <= int(raw) <= high:
        raise QueryError(name, f"must be a whole number from {low} to {high}")
    return int(raw)


def dimension(name: str) -> str:
    """The store dimension of an API dimension name (the URL segment)."""
    if name not in API_DIMENSIONS:
        raise QueryError("dimension", f"must be one of {', '.join(API_DIMENSIONS)}")
    return API_DIMENSIONS[name]


def parse_filters(raw: str | None) -> Filter | None:
    """``filters=<dimension>==<value>``, e.g. ``pages==/pricing`` or ``referrers==news.ycombinator.com``.

    One filter per query (the realtime counters are kept per single dimension); the value is
    everything after the first ``==`` and is matched exactly."""
    if not raw:
        return None
    name, sep, value = raw.partition("==")
    if not sep or not value:
        raise QueryError("filters", "must look like <dimension>==<value>, e.g. pages==/pricing")
    if name not in FILTER_DIMENSIONS:
        raise QueryError("filters", f"dimension must be one of {', '.join(FILTER_DIMENSIONS)}")
    if len(value) > MAX_VALUE_LENGTH or "\x00" in value or REFPAGE_SEPARATOR in value:
        raise QueryError("filters", f"value must be at most {MAX_VALUE_LENGTH} characters of text")
    return Filter(API_DIMENSIONS[name], value)


def parse_metrics(raw: str | None, allowed: tuple[str, ...], default: tuple[str, ...]) -> tuple[str, ...]:
    if not raw:
        return default
    names = tuple(dict.fromkeys(part.strip() for part in raw.split(",") if part.strip()))
    bad = [n for n in names if n not in allowed]
    if bad or not names:
        raise QueryError("metrics", f"must be a comma-separated list of {', '.join(allowed)}")
    return names


def text_value(raw: str, parameter: str) -> str:
    """A path or referrer domain from the URL: plain text, bounded."""
    if not raw or len(raw) > MAX_VALUE_LENGTH or "\x00" in raw or REFPAGE_SEPARATOR in raw:
        raise QueryError(parameter, f"must be 1 to {MAX_VALUE_LENGTH} characters of text")
    return raw
