"""The capture library's settings in a host site: its own ``FOOTFALL_*`` names and nothing else.

Each setting is read from the host's Django settings if defined there, else from the
environment variable of the same name. Two transports: ``http`` (the default) sends events to
the server's collector with a site ingest key; ``kafka`` produces them to the server's Kafka
and reads the salts from its Redis, for an operator's own sites. A setting of the transport a
site does not use is an error, not silently ignored. The host's own settings (SECRET_KEY, DEBUG,
ALLOWED_HOSTS, its databases) are never read or validated. :func:`load_settings` is pure
(it takes both sources as mappings) and raises one :class:`SettingsError` naming every
setting that is missing or malformed.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from footfall_capture.http_sink import Collector, check_collector_url
from footfall_capture.kafka import KafkaSettings
from footfall_capture.kafka_security import SETTINGS as KAFKA_SECURITY_SETTINGS
from footfall_capture.kafka_security import KafkaSecurity, KafkaSecurityError, load_security
from footfall_capture.query_params import site_query_params
from footfall_capture.salt_days import LATE_WINDOW, SALT_POLICIES

TRANSPORTS = ("http", "kafka")
TRACK_MODES = ("pageviews", "requests")
DEFAULT_EXCLUDES = (r"^/static/", r"^/media/", r"^/admin/", r"^/favicon\.ico$", r"^/(health|healthz|ready|readyz)/?$")
HTTP_ONLY = ("FOOTFALL_COLLECTOR_URL", "FOOTFALL_INGEST_KEY", "FOOTFALL_INGEST_KEY_FILE")
# With HTTP the collector enriches events, by the site's settings on the server (its domains,
# bot policy, salt policy and time zone): these apply to the Kafka transport only.
KAFKA_ONLY = (
    "FOOTFALL_KAFKA_BOOTSTRAP_SERVERS",
    "FOOTFALL_REDIS_URL",
    "FOOTFALL_EVENTS_TOPIC",
    "FOOTFALL_INVALID_TOPIC",
    "FOOTFALL_DOMAINS",
    "FOOTFALL_DROP_BOTS",
    "FOOTFALL_QUERY_PARAMS",
    "FOOTFALL_SALT_POLICY",
    "FOOTFALL_TIMEZONE",
    "FOOTFALL_INGEST_MAX_AGE_HOURS",
    *(f"FOOTFALL_KAFKA_{name}" for name in KAFKA_SECURITY_SETTINGS),
)
NAMES = (
    "FOOTFALL_SITE_ID",
    "FOOTFALL_TRANSPORT",
    "FOOTFALL_SPOOL_DIR",
    "FOOTFALL_SPOOL_MAX_BYTES",
    "FOOTFALL_TRUSTED_PROXIES",
    "FOOTFALL_TRACK",
    "FOOTFALL_EXCLUDE_PATHS",
    "FOOTFALL_SAMPLE_RATE",
    "FOOTFALL_RESPECT_DNT",
    *HTTP_ONLY,
    *KAFKA_ONLY,
)
_SITE_ID = re.compile(r"^[a-z0-9][a-z0-9_\-]{0,63}$")
_HOSTPORT = re.compile(r"^[A-Za-z0-9_.\-\[\]:]+:\d{1,5}$")
_TOPIC = re.compile(r"^[A-Za-z0-9._\-]{1,200}$")
_KEY = re.compile(r"^[\x21-\x7e]{16,512}$")  # an API key: printable ASCII, no spaces (it goes in a header)


class SettingsError(ValueError):
    """Some of the capture library's settings are missing or malformed; the message names each."""


@dataclass(frozen=True, slots=True)
class CaptureSettings:
    """What the middleware needs, validated."""

    site_id: str
    transport: str  # "http" or "kafka"
    collector: Collector | None  # the HTTP transport's collector and ingest key
    kafka: KafkaSettings | None  # the Kafka transport's brokers and topics
    redis_url: str | None  # the Kafka transport's salts
    spool_dir: Path
    spool_max_bytes: int
    trusted_proxies: int
    track: str
    exclude_paths: tuple[str, ...]
    sample_rate: float
    domains: tuple[str, ...]
    respect_dnt: bool
    drop_bots: bool
    query_params: frozenset[str]  # kept in page URLs besides ref and source
    salt_policy: str
    timezone: str
    late_window: dt.timedelta

    @property
    def event_type(self) -> str:
        """The type of the events this site's middleware records."""
        return "request" if self.track == "requests" else "pageview"


def default_spool_dir(environ: Mapping[str, str]) -> Path:
    """``$XDG_STATE_HOME/footfall-capture/spool`` (``~/.local/state`` if unset): durable, per user."""
    state = environ.get("XDG_STATE_HOME") or str(Path(environ.get("HOME") or Path.home()) / ".local" / "state")
    return Path(state) / "footfall-capture" / "spool"


def load_settings(django_settings: Mapping[str, Any], environ: Mapping[str, str]) -> CaptureSettings:
    """Validate the ``FOOTFALL_*`` settings (Django's first, then the environment's)."""
    problems: list[str] = []

    def raw_value(name: str) -> Any:
        return django_settings[name] if name in django_settings else environ.get(name)

    def get(name: str, parse: Callable[[Any], Any], default: Any = None, required: bool = False) -> Any:
        raw = raw_value(name)
        if raw is None or raw == "":
            if required:
                problems.append(f"{name}: required")
            return default
        try:
            return parse(raw)
        except (TypeError, ValueError) as exc:
            problems.append(f"{name}: {exc} (got {raw!r})")
            return default

    site_id = get("FOOTFALL_SITE_ID", _matching(_SITE_ID, "a site id of lower-case letters, digits, '_' or '-'"),
                  required=True)  # fmt: skip
    given = {name for name in NAMES if raw_value(name) not in (None, "")}
    # HTTP unless the site names Kafka and no collector: a site set up before HTTP existed keeps working.
    default = (
        "kafka" if "FOOTFALL_KAFKA_BOOTSTRAP_SERVERS" in given and "FOOTFALL_COLLECTOR_URL" not in given else "http"
    )
    transport = get("FOOTFALL_TRANSPORT", _choice(TRANSPORTS), default)
    unused = KAFKA_ONLY if transport == "http" else HTTP_ONLY
    problems += [f"{name}: used by the {_other(transport)} transport only, and this site sends over {transport}"
                 for name in unused if name in given]  # fmt: skip
    collector, kafka, redis_url = None, None, None
    if transport == "http":
        collector = _collector(get, site_id, problems)
    else:
        kafka, redis_url = _kafka(get, django_settings, environ, problems)
    settings = CaptureSettings(
        site_id=site_id,
        transport=transport,
        collector=collector,
        kafka=kafka,
        redis_url=redis_url,
        spool_dir=get("FOOTFALL_SPOOL_DIR", _absolute_path, default_spool_dir(environ)),
        spool_max_bytes=get("FOOTFALL_SPOOL_MAX_BYTES", _integer(1 << 16, 1 << 50), 1 << 30),
        trusted_proxies=get("FOOTFALL_TRUSTED_PROXIES", _integer(0, 10), 0),
        track=get("FOOTFALL_TRACK", _choice(TRACK_MODES), "pageviews"),
        exclude_paths=get("FOOTFALL_EXCLUDE_PATHS", _regexes, DEFAULT_EXCLUDES),
        sample_rate=get("FOOTFALL_SAMPLE_RATE", _rate, 1.0),
        domains=get("FOOTFALL_DOMAINS", _domains, ()),
        respect_dnt=get("FOOTFALL_RESPECT_DNT", _boolean, True),
        drop_bots=get("FOOTFALL_DROP_BOTS", _boolean, False),
        query_params=get("FOOTFALL_QUERY_PARAMS", _query_params, frozenset()),
        salt_policy=get("FOOTFALL_SALT_POLICY", _choice(SALT_POLICIES), "daily"),
        timezone=get("FOOTFALL_TIMEZONE", _timezone, "UTC"),
        late_window=get("FOOTFALL_INGEST_MAX_AGE_HOURS", _hours, LATE_WINDOW),
    )
    if problems:
        raise SettingsError("Footfall capture settings: " + "; ".join(problems))
    return settings


Getter = Callable[..., Any]


def _other(transport: str) -> str:
    return "kafka" if transport == "http" else "http"


def _collector(get: Getter, site_id: str | None, problems: list[str]) -> Collector | None:
    """The collector's URL and the site's ingest key (given, or read from a file)."""
    url = get("FOOTFALL_COLLECTOR_URL", check_collector_url, required=True)
    key = get("FOOTFALL_INGEST_KEY", _matching(_KEY, "an ingest key as create_api_key printed it"))
    key_file = get("FOOTFALL_INGEST_KEY_FILE", _absolute_path)
    if key and key_file:
        problems.append("FOOTFALL_INGEST_KEY and FOOTFALL_INGEST_KEY_FILE: give one of them, not both")
    elif key_file:
        try:
            key = _matching(_KEY, "an ingest key as create_api_key printed it")(key_file.read_text().strip())
        except (OSError, ValueError) as exc:
            problems.append(f"FOOTFALL_INGEST_KEY_FILE: {exc} (file {str(key_file)!r})")
    elif not key:
        problems.append("FOOTFALL_INGEST_KEY (or FOOTFALL_INGEST_KEY_FILE): required, a key of scope ingest "
                        "(manage.py create_api_key SITE_ID --scope ingest on the server)")  # fmt: skip
    if url and key and site_id:
        return Collector(url, site_id, key)
    return None


def _kafka(
    get: Getter, django_settings: Mapping[str, Any], environ: Mapping[str, str], problems: list[str]
) -> tuple[KafkaSettings | None, str | None]:
    """The Kafka transport's brokers, topics and security, and the Redis URL of the salts."""
    servers = get("FOOTFALL_KAFKA_BOOTSTRAP_SERVERS", _bootstrap_servers, required=True)
    redis_url = get("FOOTFALL_REDIS_URL", _redis_url, required=True)
    try:
        security = load_security(lambda name: _text(django_settings.get(name, environ.get(name))), "FOOTFALL_KAFKA_")
    except KafkaSecurityError as exc:
        problems.append(str(exc))
        security = KafkaSecurity()
    kafka = KafkaSettings(
        bootstrap_servers=servers,
        events_topic=get("FOOTFALL_EVENTS_TOPIC", _matching(_TOPIC, "a Kafka topic name"), "events"),
        invalid_topic=get("FOOTFALL_INVALID_TOPIC", _matching(_TOPIC, "a Kafka topic name"), "events.invalid"),
        security=security,
    )
    return kafka, redis_url


def from_django() -> CaptureSettings:
    """:func:`load_settings` from ``django.conf.settings`` and ``os.environ``."""
    from django.conf import settings

    defined = {name: getattr(settings, name) for name in NAMES if hasattr(settings, name)}
    return load_settings(defined, os.environ)


# --- parsers: each takes a Django value or an environment string ------------------------
def _text(raw: Any) -> str | None:
    return None if raw is None else str(raw)


def _matching(pattern: re.Pattern[str], expected: str) -> Callable[[Any], str]:
    def parse(raw: Any) -> str:
        if not isinstance(raw, str) or not pattern.fullmatch(raw):
            raise ValueError(f"expected {expected}")
        return raw

    return parse


def _items(raw: Any) -> list[str]:
    """A list from a Django list/tuple or a comma-separated string."""
    if isinstance(raw, str):
        return [item.strip() for item in raw.split(",") if item.strip()]
    if isinstance(raw, (list, tuple)) and all(isinstance(item, str) for item in raw):
        return [item.strip() for item in raw]
    raise ValueError("expected a list of strings or a comma-separated string")


def _bootstrap_servers(raw: Any) -> str:
    servers = _items(raw)
    if not servers or not all(_HOSTPORT.fullmatch(s) and 0 < int(s.rsplit(":", 1)[1]) < 65536 for s in servers):
        raise ValueError("expected comma-separated host:port pairs")
    return ",".join(servers)


def _redis_url(raw: Any) -> str:
    parts = urlsplit(str(raw))
    if parts.scheme not in ("redis", "rediss", "unix") or not (parts.hostname or parts.scheme == "unix"):
        raise ValueError("expected a URL redis://host:port/db, rediss://… or unix://…")
    return str(raw)


def _absolute_path(raw: Any) -> Path:
    path = Path(str(raw)).expanduser()
    if not path.is_absolute():
        raise ValueError("expected an absolute directory path")
    return path


def _integer(low: int, high: int) -> Callable[[Any], int]:
    def parse(raw: Any) -> int:
        if isinstance(raw, bool) or not isinstance(raw, (int, str)):
            raise ValueError(f"expected an integer between {low} and {high}")
        value = int(raw)
        if not low <= value <= high:
            raise ValueError(f"expected an integer between {low} and {high}")
        return value

    return parse


def _choice(choices: tuple[str, ...]) -> Callable[[Any], str]:
    def parse(raw: Any) -> str:
        if raw not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}")
        return raw

    return parse


def _regexes(raw: Any) -> tuple[str, ...]:
    patterns = tuple(_items(raw))
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"{pattern!r} is not a regular expression ({exc})") from None
    return patterns


def _rate(raw: Any) -> float:
    value = float(raw)
    if not 0.0 < value <= 1.0:
        raise ValueError("expected a number in (0, 1]")
    return value


def _domains(raw: Any) -> tuple[str, ...]:
    return tuple(domain.lower() for domain in _items(raw))


def _query_params(raw: Any) -> frozenset[str]:
    return site_query_params(_items(raw))


def _boolean(raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    lowered = str(raw).strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ValueError("expected a boolean (1/0, true/false, yes/no, on/off)")


def _timezone(raw: Any) -> str:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(str(raw))
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError("expected an IANA time zone such as Europe/Berlin") from None
    return str(raw)


def _hours(raw: Any) -> dt.timedelta:
    return dt.timedelta(hours=_integer(1, 24 * 366)(raw))
