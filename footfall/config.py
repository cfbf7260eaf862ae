"""Footfall's configuration: every setting read from the environment, in one place.

Twelve-factor: each value comes from an environment variable with a default that works
against the local stack started by ``deploy/local/stack.py``. The development defaults of
SECRET_KEY, ALLOWED_HOSTS and DEBUG apply only when ``FOOTFALL_ENV=local`` is set (the
stack sets it); otherwise those and the trusted-proxy count must be given. Values are validated when
the process starts; a bad value raises :class:`ConfigError` naming the variable and what
was expected, so a typo fails loudly at boot instead of at 3 a.m. on the first request.

:func:`load_config` is pure (it takes the environment as a mapping), so it is unit-tested
without touching ``os.environ``. Django's ``settings.py``, the Celery app, the workers and
the local stack all read the same :class:`Config`; code running under Django gets it from
:func:`footfall_config`.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import dj_database_url
from django.conf import settings

from footfall_capture.kafka import KafkaSettings
from footfall_capture.kafka_security import KafkaSecurity, KafkaSecurityError, load_security


class ConfigError(ValueError):
    """A configuration variable is missing or malformed; the message names it."""

    def __init__(self, variable: str, expected: str, got: str | None = None) -> None:
        shown = "" if got is None else f" (got {got!r})"
        super().__init__(f"{variable}: expected {expected}{shown}")
        self.variable = variable


class MissingSettingsError(ConfigError):
    """Outside development mode, variables without a safe default are unset; names them all at once."""

    def __init__(self, variables: list[str]) -> None:
        ValueError.__init__(
            self,
            f"{', '.join(variables)}: required outside development mode, please set "
            + " and ".join(f"{name} ({REQUIRED_HINTS[name]})" for name in variables)
            + f"; for a local development server set FOOTFALL_ENV={DEVELOPMENT_ENV} instead",
        )
        self.variable = variables[0]
        self.variables = tuple(variables)


# Ports of the local single-node stack. The stack script starts services on these ports
# (each overridable with FOOTFALL_<SERVICE>_PORT) and the URL defaults below point at them,
# so the stack needs no variable but FOOTFALL_ENV=local. They are deliberately not the
# services' well-known ports, so the stack never collides with a Redis or MongoDB the
# developer already runs.
LOCAL_PORTS: Mapping[str, int] = {
    "kafka": 19092,  # the controller listens on kafka + 1
    "redis": 16379,
    # The first of three consecutive ports of `stack start redis-shards`, Redis shards of the
    # speed layer for sharding tests (FOOTFALL_REALTIME_REDIS_URLS is never defaulted to them).
    "redis_shards": 16380,
    "mongo": 17017,
    "web": 8000,
    "minio": 19000,  # the S3 server of `stack start minio` (ARCHIVE_S3_ENDPOINT is never defaulted)
}

ENVIRONMENTS = ("local", "test", "production")
# The only mode with development defaults (DEBUG, a public SECRET_KEY, localhost names). It
# must be asked for: with FOOTFALL_ENV unset Footfall runs as in production, so a server
# started without its configuration refuses to start instead of running in debug mode.
DEVELOPMENT_ENV = "local"
# What an operator must decide outside development mode; nothing safe can be guessed.
REQUIRED_HINTS: Mapping[str, str] = {
    "SECRET_KEY": "a random string of at least 50 characters, e.g. "
    "`python -c 'import secrets; print(secrets.token_urlsafe(50))'`",
    "ALLOWED_HOSTS": "the comma-separated host names the server answers to, e.g. stats.example.com",
    "FOOTFALL_TRUSTED_PROXIES": "how many reverse proxies append to X-Forwarded-For in front of "
    "the server, 0 when clients connect to it directly",
}
INSECURE_DEV_SECRET = "footfall-insecure-local-development-key-never-use-in-production"  # noqa: S105
MIN_SECRET_LENGTH = 50

# How long the events topic keeps events by default, and what it must keep beyond the
# realtime window: the time a rebuild from the log may take to read it.
DEFAULT_EVENTS_RETENTION_MS = 7 * 86_400_000
EVENTS_RETENTION_MARGIN_MS = 3_600_000

SQLITE_ENGINE = "footfall.sqlite"
_HOSTPORT = re.compile(r"^[A-Za-z0-9_.\-\[\]:]+:\d{1,5}$")
_SPARK_LOCAL = re.compile(r"^local(\[(\*|\d+)(,\d+)?\])?$")
_REMOTE_ARCHIVE_SCHEMES = ("s3a", "s3", "hdfs", "gs", "abfs", "abfss", "wasbs")
S3_ARCHIVE_SCHEMES = ("s3", "s3a")
_AWS_REGION = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")  # us-east-1; "auto" or a custom name elsewhere


@dataclass(frozen=True, slots=True)
class Email:
    """How alert and report emails leave: ``EMAIL_URL`` parsed. ``backend`` is ``smtp`` (``smtp://``,
    STARTTLS when the URL says ``?tls=starttls`` or the port is 587; ``smtps://``: TLS from the first
    byte), ``file`` (each message a file in ``path``: the local stack's default) or ``console``. The
    password never appears in a repr."""

    backend: str
    host: str = ""
    port: int = 0
    user: str = ""
    password: str = field(default="", repr=False)
    starttls: bool = False
    ssl: bool = False
    path: Path | None = None
    sender: str = "Footfall <footfall@localhost>"


EMAIL_SCHEMES = ("smtp", "smtps", "file", "console")


@dataclass(frozen=True, slots=True)
class ArchiveS3:
    """How to reach an ``s3://`` archive. Keys unset: the AWS SDKs' own chain (instance
    role, ``~/.aws``); endpoint unset: Amazon S3 itself. The secret never appears in a repr."""

    endpoint: str | None  # http(s)://host:port of an S3-compatible server
    access_key_id: str | None
    secret_access_key: str | None = field(repr=False)
    region: str = "us-east-1"


@dataclass(frozen=True, slots=True)
class Config:
    """Validated settings of one Footfall process."""

    environment: str
    debug: bool
    secret_key: str
    allowed_hosts: tuple[str, ...]
    database: dict[str, object]
    kafka_bootstrap_servers: str
    kafka_security: KafkaSecurity
    events_topic: str
    invalid_topic: str
    events_partitions: int
    replication_factor: int
    min_insync_replicas: int
    events_retention_ms: int  # -1: kept for ever
    redis_url: str
    # The speed layer's Redis shards (realtime.keys, Shards); one, REDIS_URL, by default.
    realtime_redis_urls: tuple[str, ...]
    celery_broker_url: str
    cache_url: str
    mongo_url: str
    mongo_db: str
    spark_master: str
    archive_url: str
    archive_s3: ArchiveS3
    # Jars on the same path on the driver and every Spark node, e.g. hadoop-aws and the AWS
    # SDK for an s3:// archive ("" when the cluster's Spark has them already).
    spark_extra_classpath: str
    spark_driver_memory: str  # spark-submit --driver-memory: the rollup's driver collects one day at a time
    # The rollup's spark.sql.shuffle.partitions; 0 leaves Spark's own (200, or the cluster's setting).
    spark_shuffle_partitions: int
    data_dir: Path
    static_root: Path
    spool_dir: Path
    spool_max_bytes: int
    trusted_proxies: int
    client_rate: float
    client_burst: int
    ingest_max_age_ms: int
    realtime_retention_s: int
    realtime_dedup_s: int  # how long the speed layer recognises a repeated event id (at least)
    api_rate_per_minute: int
    api_cache_items: int  # 0: no cache of settled reads
    live_events_per_s: int  # the dashboard's Live events: past this many a second, a viewer sees 1 in N
    email: Email
    # The dashboard's address as people reach it, for links in emails (unsubscribe, open the
    # dashboard); None outside development mode unless FOOTFALL_PUBLIC_URL is set.
    public_url: str | None
    # FOOTFALL_WEBHOOK_ALLOWED_NETWORKS: networks beyond the public internet that webhooks may
    # reach (empty: public addresses only); None ("*"): any address, unchecked, through
    # HTTP(S)_PROXY when set (see alerts.egress).
    webhook_allowed_networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] | None = ()
    # FOOTFALL_FORWARDING_PROXIES: the tracked sites' own reverse proxies that forward beacons
    # to Footfall (docs/collector.md#your-own-domain). Behind ``trusted_proxies``, a hop from one
    # of these networks is a forwarder too, and the address it names in X-Forwarded-For is
    # believed: the visitor's, not the site's server.
    forwarding_proxies: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()
    # Where the collector also serves the tracker and takes beacons (FOOTFALL_TRACKER_PATH,
    # FOOTFALL_COLLECT_PATH), besides /footfall.js and /collect: names content blockers do not list.
    tracker_path: str = "/footfall.js"
    collect_path: str = "/collect"
    # How long a read of the API or the dashboard waits for a store that does not answer
    # before it gives up with a 503: short, so a store's outage never holds the web threads
    # (MONGO_TIMEOUT_MS, REDIS_TIMEOUT_MS). Batch jobs wait longer (historical.store.BATCH_TIMEOUT_MS).
    mongo_timeout_ms: int = 1000
    redis_timeout_ms: int = 1000
    # How long such a read waits for Mongo's answer, in one attempt (MONGO_QUERY_TIMEOUT_MS,
    # socketTimeoutMS, retryReads off): a hung server (it accepts, never answers) costs a web
    # thread this at most, instead of until pymongo's monitor gives the server up and the read
    # is retried (~10 s). Longer than the slowest legitimate read, which a timeout would answer
    # 503 and count as the store failing.
    mongo_query_timeout_ms: int = 5000
    # Earlier SECRET_KEYs (SECRET_KEY_FALLBACKS): what they signed (sessions, unsubscribe links
    # already emailed, share-link cookies) stays valid through a rotation; new signatures use SECRET_KEY.
    secret_key_fallbacks: tuple[str, ...] = field(default=(), repr=False)

    @property
    def kafka(self) -> KafkaSettings:
        """Where the collector's producers write."""
        return KafkaSettings(self.kafka_bootstrap_servers, self.events_topic, self.invalid_topic, self.kafka_security)

    @property
    def archive_is_local(self) -> bool:
        """True when the archive is a directory on this machine (file:// or a plain path)."""
        return not urlsplit(self.archive_url).scheme.startswith(_REMOTE_ARCHIVE_SCHEMES)


def load_config(env: Mapping[str, str], base_dir: Path | None) -> Config:
    """Build and validate a :class:`Config` from ``env``; raise :class:`ConfigError` on bad input.

    ``base_dir`` is the project checkout, or None when Footfall runs from an installed
    package. Local defaults (SQLite file, archive, static files) live in the data directory:
    ``FOOTFALL_DATA_DIR``, else ``<base_dir>/var`` in a checkout, else the user's XDG data
    directory (never inside site-packages). Nothing is created here.
    """
    environment = _choice(env, "FOOTFALL_ENV", ENVIRONMENTS, default="production")
    debug = _bool(env, "DEBUG", default=environment == DEVELOPMENT_ENV)
    if environment != DEVELOPMENT_ENV and debug:
        raise ConfigError("DEBUG", f"false unless FOOTFALL_ENV={DEVELOPMENT_ENV}", env.get("DEBUG"))
    if environment != DEVELOPMENT_ENV:
        # One error naming every unset variable, so an operator fixes them in one go.
        missing = [name for name in REQUIRED_HINTS if not env.get(name, "").strip()]
        if missing:
            raise MissingSettingsError(missing)

    data_dir = Path(env.get("FOOTFALL_DATA_DIR") or default_data_dir(env, base_dir)).expanduser().resolve()
    realtime_retention_s = _int(env, "FOOTFALL_REALTIME_RETENTION_HOURS", 48, low=1, high=24 * 31) * 3600
    replication_factor = _int(env, "FOOTFALL_REPLICATION_FACTOR", 1, low=1, high=10)
    redis_url = _url(env, "REDIS_URL", ("redis", "rediss", "unix"), f"redis://127.0.0.1:{LOCAL_PORTS['redis']}/0")
    allowed_hosts = _allowed_hosts(env, debug)
    return Config(
        environment=environment,
        debug=debug,
        secret_key=_secret_key(env, debug, allowed_hosts),
        secret_key_fallbacks=_secret_key_fallbacks(env, debug),
        allowed_hosts=allowed_hosts,
        database=_database(env, data_dir),
        kafka_bootstrap_servers=_bootstrap_servers(env),
        kafka_security=_kafka_security(env),
        events_topic=_name(env, "FOOTFALL_EVENTS_TOPIC", "events"),
        invalid_topic=_name(env, "FOOTFALL_INVALID_TOPIC", "events.invalid"),
        events_partitions=_int(env, "FOOTFALL_EVENTS_PARTITIONS", 6, low=1, high=10_000),
        replication_factor=replication_factor,
        # With one replica to spare, an acks=all write survives the loss of any one broker.
        min_insync_replicas=_int(
            env, "FOOTFALL_MIN_INSYNC_REPLICAS", min(2, replication_factor - 1) or 1, low=1, high=replication_factor
        ),
        events_retention_ms=_events_retention_ms(env, realtime_retention_s),
        redis_url=redis_url,
        realtime_redis_urls=_redis_shards(env, "FOOTFALL_REALTIME_REDIS_URLS", redis_url),
        # Celery's broker lives in its own Redis database so a FLUSHDB of counters in a
        # test or a rebuild can never drop queued tasks.
        celery_broker_url=_url(env, "CELERY_BROKER_URL", ("redis", "rediss"), _with_db(redis_url, 1)),
        cache_url=_url(env, "FOOTFALL_CACHE_URL", ("redis", "rediss", "unix"), _with_db(redis_url, 2)),
        mongo_url=_url(env, "MONGO_URL", ("mongodb", "mongodb+srv"), f"mongodb://127.0.0.1:{LOCAL_PORTS['mongo']}/"),
        mongo_db=_name(env, "MONGO_DB", "footfall"),
        spark_master=_spark_master(env),
        archive_url=_archive_url(env, data_dir),
        archive_s3=_archive_s3(env),
        spark_extra_classpath=_classpath(env, "FOOTFALL_SPARK_EXTRA_CLASSPATH"),
        spark_driver_memory=_memory(env, "FOOTFALL_SPARK_DRIVER_MEMORY", "2g"),
        spark_shuffle_partitions=_int(env, "FOOTFALL_SPARK_SHUFFLE_PARTITIONS", 0, low=0, high=100_000),
        data_dir=data_dir,
        static_root=_absolute_dir(env, "FOOTFALL_STATIC_ROOT", data_dir / "static"),
        spool_dir=Path(env.get("FOOTFALL_SPOOL_DIR") or data_dir / "spool").expanduser().resolve(),
        spool_max_bytes=_int(env, "FOOTFALL_SPOOL_MAX_BYTES", 1 << 30, low=1 << 16),
        # How many reverse proxies in front of the collector append to X-Forwarded-For;
        # 0 means the socket's peer address is the client (X-Forwarded-For is ignored).
        # Required outside development mode: behind a proxy, 0 would make every visitor the proxy.
        trusted_proxies=_int(env, "FOOTFALL_TRUSTED_PROXIES", 0, low=0, high=10),
        client_rate=float(_int(env, "FOOTFALL_CLIENT_RATE", 20, low=1, high=100_000)),
        live_events_per_s=_int(env, "FOOTFALL_LIVE_EVENTS_PER_S", 20, low=1, high=1000),
        client_burst=_int(env, "FOOTFALL_CLIENT_BURST", 100, low=1, high=1_000_000),
        # Server-side batches may carry their own event times, at most this far in the past
        # (older days are backfilled with the import command and a re-rollup).
        ingest_max_age_ms=_int(env, "FOOTFALL_INGEST_MAX_AGE_HOURS", 7 * 24, low=1, high=24 * 366) * 3_600_000,
        realtime_retention_s=realtime_retention_s,
        realtime_dedup_s=_int(env, "FOOTFALL_REALTIME_DEDUP_HOURS", 2, low=1, high=realtime_retention_s // 3600) * 3600,
        api_rate_per_minute=_int(env, "FOOTFALL_API_RATE_PER_MINUTE", 600, low=1, high=1_000_000),
        # Per process: rollup documents and breakdown values held from reads of settled days
        # (measured ~0.6 KB a document, ~0.2 KB a value: the default holds ~120 MB at most).
        api_cache_items=_int(env, "FOOTFALL_API_CACHE_ITEMS", 200_000, low=0, high=100_000_000),
        email=_email(env, data_dir, environment),
        public_url=_public_url(env, environment),
        webhook_allowed_networks=_webhook_networks(env, "FOOTFALL_WEBHOOK_ALLOWED_NETWORKS"),
        forwarding_proxies=_networks(env, "FOOTFALL_FORWARDING_PROXIES"),
        tracker_path=_public_path(env, "FOOTFALL_TRACKER_PATH", "/footfall.js"),
        collect_path=_public_path(env, "FOOTFALL_COLLECT_PATH", "/collect"),
        mongo_timeout_ms=_int(env, "MONGO_TIMEOUT_MS", 1000, low=50, high=120_000),
        redis_timeout_ms=_int(env, "REDIS_TIMEOUT_MS", 1000, low=50, high=120_000),
        mongo_query_timeout_ms=_int(env, "MONGO_QUERY_TIMEOUT_MS", 5000, low=100, high=600_000),
    )


@cache
def footfall_config() -> Config:
    """Footfall's own settings object, or the same configuration read from the environment
    when the settings module did not build one."""
    cfg = getattr(settings, "FOOTFALL", None)
    if isinstance(cfg, Config):
        return cfg
    return load_config(os.environ, Path(getattr(settings, "BASE_DIR", Path.cwd())))


def default_data_dir(env: Mapping[str, str], base_dir: Path | None) -> Path:
    """``<base_dir>/var`` in a checkout; ``$XDG_DATA_HOME/footfall`` (``~/.local/share/footfall``)
    for an installed package, whose own folder may be read-only and is replaced on upgrade."""
    if base_dir is not None:
        return base_dir / "var"
    xdg = env.get("XDG_DATA_HOME", "")
    if xdg.startswith("/"):  # the XDG spec: a relative value is invalid and ignored
        return Path(xdg) / "footfall"
    home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    return home / ".local" / "share" / "footfall"


def _absolute_dir(env: Mapping[str, str], name: str, default: Path) -> Path:
    raw = env.get(name)
    if not raw:
        return default
    path = Path(raw).expanduser()
    if not path.is_absolute():
        raise ConfigError(name, "an absolute directory path", raw)
    return path.resolve()


def _bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    lowered = raw.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ConfigError(name, "a boolean (1/0, true/false, yes/no, on/off)", raw)


def _int(env: Mapping[str, str], name: str, default: int, low: int, high: int = 1 << 62) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(name, f"an integer between {low} and {high}", raw) from None
    if not low <= value <= high:
        raise ConfigError(name, f"an integer between {low} and {high}", raw)
    return value


def _choice(env: Mapping[str, str], name: str, choices: tuple[str, ...], default: str) -> str:
    raw = env.get(name) or default
    if raw not in choices:
        raise ConfigError(name, f"one of {', '.join(choices)}", raw)
    return raw


def _name(env: Mapping[str, str], name: str, default: str) -> str:
    raw = env.get(name) or default
    if not re.fullmatch(r"[A-Za-z0-9._\-]{1,200}", raw):
        raise ConfigError(name, "a name of letters, digits, '.', '_' or '-'", raw)
    return raw


def _weak_secret(key: str) -> bool:
    """Too short to sign with, or the development key everyone can read."""
    return len(key) < MIN_SECRET_LENGTH or key == INSECURE_DEV_SECRET


def _secret_key(env: Mapping[str, str], debug: bool, allowed_hosts: tuple[str, ...]) -> str:
    raw = env.get("SECRET_KEY", "")
    if raw:
        if not debug and _weak_secret(raw):
            raise ConfigError("SECRET_KEY", f"a random string of at least {MIN_SECRET_LENGTH} characters")
        return raw
    public = [host for host in allowed_hosts if not _is_local_host(host)]
    if public:  # the development key is public: a server others can reach must not sign with it
        raise ConfigError("SECRET_KEY", f"a secret key: ALLOWED_HOSTS names {public[0]!r}, which is not this machine")
    if debug:
        return INSECURE_DEV_SECRET
    raise ConfigError(
        "SECRET_KEY",
        "a secret key whenever DEBUG is off (generate one with "
        "`python -c 'import secrets; print(secrets.token_urlsafe(50))'`)",
    )


def _secret_key_fallbacks(env: Mapping[str, str], debug: bool) -> tuple[str, ...]:
    """``SECRET_KEY_FALLBACKS``: earlier secret keys, comma-separated (the keys Footfall tells
    operators to generate hold no comma), each as long as a SECRET_KEY must be."""
    keys = tuple(key.strip() for key in env.get("SECRET_KEY_FALLBACKS", "").split(",") if key.strip())
    for key in keys:
        if not debug and _weak_secret(key):
            raise ConfigError("SECRET_KEY_FALLBACKS", f"earlier secret keys of at least {MIN_SECRET_LENGTH} characters")
    return keys


_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "[::1]", "::1", "testserver"})


def _is_local_host(host: str) -> bool:
    """Whether an ALLOWED_HOSTS entry names only this machine (``localhost``, a loopback address,
    ``*.localhost``, Django's ``testserver``)."""
    host = host.lower()
    return host in _LOCAL_HOSTS or host.endswith(".localhost") or host.startswith("127.")


def _allowed_hosts(env: Mapping[str, str], debug: bool) -> tuple[str, ...]:
    raw = env.get("ALLOWED_HOSTS", "")
    hosts = tuple(h.strip() for h in raw.split(",") if h.strip())
    if hosts:
        return hosts
    if debug:
        return ("localhost", "127.0.0.1", "[::1]", "testserver")
    raise ConfigError("ALLOWED_HOSTS", "a comma-separated list of host names whenever DEBUG is off")


def _database(env: Mapping[str, str], data_dir: Path) -> dict[str, object]:
    raw = env.get("DATABASE_URL") or f"sqlite:///{data_dir / 'footfall.sqlite3'}"
    try:
        parsed = dj_database_url.parse(raw, conn_max_age=60, conn_health_checks=True)
    except (ValueError, KeyError) as exc:
        raise ConfigError(
            "DATABASE_URL", "a database URL such as sqlite:////abs/path.db or postgres://user:pw@host/db", raw
        ) from exc
    if not parsed.get("ENGINE") or not parsed.get("NAME"):
        raise ConfigError("DATABASE_URL", "a database URL naming an engine and a database", raw)
    if parsed["ENGINE"] == "django.db.backends.sqlite3":
        parsed["ENGINE"] = SQLITE_ENGINE  # Django's, making the file's folder on first connect
    return dict(parsed)


def _bootstrap_servers(env: Mapping[str, str]) -> str:
    raw = env.get("KAFKA_BOOTSTRAP_SERVERS") or f"127.0.0.1:{LOCAL_PORTS['kafka']}"
    servers = [s.strip() for s in raw.split(",")]
    for server in servers:
        if not _HOSTPORT.match(server) or not 0 < int(server.rsplit(":", 1)[1]) < 65536:
            raise ConfigError("KAFKA_BOOTSTRAP_SERVERS", "comma-separated host:port pairs", raw)
    return ",".join(servers)


def least_events_retention_ms(realtime_retention_s: int) -> int:
    """The events topic must keep the whole realtime window (plus the time a rebuild takes),
    or ``rebuild_realtime`` would recount a window whose oldest events Kafka already deleted."""
    return realtime_retention_s * 1000 + EVENTS_RETENTION_MARGIN_MS


def _events_retention_ms(env: Mapping[str, str], realtime_retention_s: int) -> int:
    least = least_events_retention_ms(realtime_retention_s)
    raw = env.get("FOOTFALL_EVENTS_RETENTION_MS")
    if raw is None or raw == "":
        return max(DEFAULT_EVENTS_RETENTION_MS, least)
    value = _int(env, "FOOTFALL_EVENTS_RETENTION_MS", 0, low=-1)
    if value != -1 and value < least:
        raise ConfigError(
            "FOOTFALL_EVENTS_RETENTION_MS",
            f"-1 (for ever) or at least {least} ms: the realtime window "
            f"(FOOTFALL_REALTIME_RETENTION_HOURS={realtime_retention_s // 3600}) plus "
            f"{EVENTS_RETENTION_MARGIN_MS // 3_600_000} h, so the counters can be rebuilt from the log",
            raw,
        )
    return value


def _kafka_security(env: Mapping[str, str]) -> KafkaSecurity:
    try:
        return load_security(env.get, "KAFKA_")
    except KafkaSecurityError as exc:
        raise ConfigError(exc.variable, exc.expected) from None


def _url(env: Mapping[str, str], name: str, schemes: tuple[str, ...], default: str) -> str:
    raw = env.get(name) or default
    parts = urlsplit(raw)
    if parts.scheme not in schemes or not (parts.netloc or parts.path):
        raise ConfigError(name, f"a URL with scheme {' or '.join(s + '://' for s in schemes)}", raw)
    if parts.scheme not in {"unix"} and not parts.hostname:
        raise ConfigError(name, "a URL with a host name", raw)
    try:
        _ = parts.port
    except ValueError as exc:
        raise ConfigError(name, "a URL whose port is a number between 1 and 65535", raw) from exc
    return raw


def _email(env: Mapping[str, str], data_dir: Path, environment: str) -> Email:
    """``EMAIL_URL`` (and ``EMAIL_FROM``): in development mode mail goes to files under the data
    directory by default; elsewhere to an SMTP server on this host (Django's own default)."""
    default = f"file://{data_dir / 'mail'}" if environment == DEVELOPMENT_ENV else "smtp://localhost:25"
    raw = env.get("EMAIL_URL") or default
    sender = env.get("EMAIL_FROM") or "Footfall <footfall@localhost>"
    if "@" not in sender or "\n" in sender or "\r" in sender:
        raise ConfigError("EMAIL_FROM", "an address such as Footfall <stats@example.com>", sender)
    parts = urlsplit(raw)
    if parts.scheme not in EMAIL_SCHEMES:
        raise ConfigError("EMAIL_URL", f"a URL with scheme {' or '.join(s + '://' for s in EMAIL_SCHEMES)}", raw)
    if parts.scheme == "console":
        return Email("console", sender=sender)
    if parts.scheme == "file":
        if not parts.path.startswith("/"):
            raise ConfigError("EMAIL_URL", "file:// and an absolute directory", raw)
        return Email("file", path=Path(parts.path), sender=sender)
    try:
        port = parts.port or (465 if parts.scheme == "smtps" else 25)
    except ValueError as exc:
        raise ConfigError("EMAIL_URL", "a URL whose port is a number between 1 and 65535", raw) from exc
    if not parts.hostname:
        raise ConfigError("EMAIL_URL", "a URL with a host name", raw)
    tls = parse_qs(parts.query).get("tls", [""])[0]
    if tls not in {"", "starttls", "none"}:
        raise ConfigError("EMAIL_URL", "?tls=starttls or ?tls=none", raw)
    starttls = parts.scheme == "smtp" and (tls == "starttls" or (port == 587 and tls != "none"))
    return Email(
        "smtp", parts.hostname, port, unquote(parts.username or ""), unquote(parts.password or ""),
        starttls=starttls, ssl=parts.scheme == "smtps", sender=sender,
    )  # fmt: skip


def _public_url(env: Mapping[str, str], environment: str) -> str | None:
    raw = (env.get("FOOTFALL_PUBLIC_URL") or "").strip()
    if not raw:
        return f"http://127.0.0.1:{LOCAL_PORTS['web']}" if environment == DEVELOPMENT_ENV else None
    parts = urlsplit(raw)
    if parts.scheme not in {"http", "https"} or not parts.hostname or parts.query or parts.fragment:
        raise ConfigError("FOOTFALL_PUBLIC_URL", "the dashboard's base URL, e.g. https://stats.example.com", raw)
    return raw.rstrip("/")


def _webhook_networks(
    env: Mapping[str, str], name: str
) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] | None:
    """:func:`_networks`, or None for ``*``: any address."""
    return None if env.get(name, "").strip() == "*" else _networks(env, name)


def _networks(env: Mapping[str, str], name: str) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    """Comma-separated networks (``10.0.0.0/8``, ``fd00::/8``; a bare address is its /32 or
    /128); host bits must be zero, so a typo such as ``10.0.0.1/8`` is refused rather than
    read as a wider network than meant."""
    raw = env.get(name, "").strip()
    networks = []
    for item in (part.strip() for part in raw.split(",")):
        if not item:
            continue
        try:
            networks.append(ipaddress.ip_network(item, strict=True))
        except ValueError as exc:
            raise ConfigError(name, f"comma-separated networks such as 10.0.0.0/8,fd00::/8 (host bits zero) ({exc})",
                              raw) from None  # fmt: skip
    return tuple(networks)


# Footfall's own first path segments: a chosen tracker or collect path must not hide one.
_OWN_PREFIXES = ("admin", "api", "dashboard", "alerts", "static", "p.gif")
_PATH = re.compile(r"^(/[A-Za-z0-9._~-]+)+$")


def _public_path(env: Mapping[str, str], name: str, default: str) -> str:
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    if not _PATH.fullmatch(raw) or raw.split("/")[1] in _OWN_PREFIXES or ".." in raw:
        raise ConfigError(
            name, f"a path such as /js/site.js: letters, digits, '.', '_', '~', '-' between slashes, "
            f"not under /{', /'.join(_OWN_PREFIXES)}", raw,
        )  # fmt: skip
    return raw


def _redis_shards(env: Mapping[str, str], name: str, redis_url: str) -> tuple[str, ...]:
    """``FOOTFALL_REALTIME_REDIS_URLS``: comma-separated Redis URLs, each a shard of the
    speed layer, in a fixed order (an event's shard is its position: never reorder them
    while counters are kept; see realtime.keys)."""
    raw = env.get(name, "").strip()
    if not raw:
        return (redis_url,)
    urls = tuple(url.strip() for url in raw.split(","))
    for url in urls:
        _url({name: url}, name, ("redis", "rediss", "unix"), url)
    if len(set(urls)) != len(urls):
        raise ConfigError(name, "distinct Redis URLs, one per shard", raw)
    return urls


def _with_db(redis_url: str, db: int) -> str:
    parts = urlsplit(redis_url)
    if parts.scheme == "unix":
        return redis_url
    return parts._replace(path=f"/{db}").geturl()


_MEMORY = re.compile(r"[1-9][0-9]*[kmgt]", re.IGNORECASE)


def _memory(env: Mapping[str, str], name: str, default: str) -> str:
    raw = env.get(name) or default
    if not _MEMORY.fullmatch(raw):
        raise ConfigError(name, "a JVM memory size such as 512m or 2g", raw)
    return raw


def _spark_master(env: Mapping[str, str]) -> str:
    raw = env.get("SPARK_MASTER") or "local[*]"
    if _SPARK_LOCAL.match(raw) or raw == "yarn":
        return raw
    if raw.startswith(("spark://", "k8s://")) and urlsplit(raw.removeprefix("k8s://")).netloc:
        return raw
    raise ConfigError(
        "SPARK_MASTER", "local, local[N], local[*], spark://host:port, yarn or k8s://https://host:port", raw
    )


def _archive_url(env: Mapping[str, str], data_dir: Path) -> str:
    raw = env.get("ARCHIVE_URL") or (data_dir / "archive").as_uri()
    parts = urlsplit(raw)
    if parts.scheme == "file":
        if not parts.path.startswith("/"):
            raise ConfigError("ARCHIVE_URL", "an absolute file:// URL", raw)
        return raw.rstrip("/")
    if parts.scheme == "" and raw.startswith("/"):
        return Path(raw).as_uri()
    if parts.scheme in _REMOTE_ARCHIVE_SCHEMES and parts.netloc:
        return raw.rstrip("/")
    raise ConfigError(
        "ARCHIVE_URL",
        "an absolute directory, a file:// URL, or "
        + ", ".join(s + "://bucket/prefix" for s in _REMOTE_ARCHIVE_SCHEMES),
        raw,
    )


def _archive_s3(env: Mapping[str, str]) -> ArchiveS3:
    endpoint = env.get("ARCHIVE_S3_ENDPOINT") or None
    if endpoint is not None:
        parts = urlsplit(endpoint)
        try:
            valid = parts.scheme in ("http", "https") and bool(parts.hostname) and parts.path in ("", "/")
            _ = parts.port
        except ValueError:
            valid = False
        if not valid:
            raise ConfigError(
                "ARCHIVE_S3_ENDPOINT", "the URL of an S3-compatible server, e.g. http://127.0.0.1:9000", endpoint
            )
    key_id = env.get("AWS_ACCESS_KEY_ID") or None
    secret = env.get("AWS_SECRET_ACCESS_KEY") or None
    # Never echo a key: a config error ends up in logs.
    if key_id and not secret:
        raise ConfigError("AWS_SECRET_ACCESS_KEY", "set whenever AWS_ACCESS_KEY_ID is")
    if secret and not key_id:
        raise ConfigError("AWS_ACCESS_KEY_ID", "set whenever AWS_SECRET_ACCESS_KEY is")
    for name, value in (("AWS_ACCESS_KEY_ID", key_id), ("AWS_SECRET_ACCESS_KEY", secret)):
        if value is not None and (value != value.strip() or any(ord(c) < 33 for c in value)):
            raise ConfigError(name, "a key without spaces or control characters")
    region = env.get("AWS_REGION") or "us-east-1"
    if not _AWS_REGION.match(region):
        raise ConfigError("AWS_REGION", "a region name such as us-east-1 (lowercase letters, digits, -)", region)
    return ArchiveS3(endpoint.rstrip("/") if endpoint else None, key_id, secret, region)


def _classpath(env: Mapping[str, str], name: str) -> str:
    raw = env.get(name, "").strip()
    entries = [e for e in raw.split(":") if e]
    if any(not e.startswith("/") for e in entries):
        raise ConfigError(name, "absolute paths separated by ':' (a directory's jars as /dir/*)", raw)
    return ":".join(entries)
