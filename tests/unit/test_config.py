"""Configuration from the environment: working defaults, loud and specific failures."""

from __future__ import annotations

from pathlib import Path

import pytest

from footfall.config import INSECURE_DEV_SECRET, LOCAL_PORTS, ConfigError, MissingSettingsError, load_config

BASE = Path("/srv/footfall")
PROD = {
    "FOOTFALL_ENV": "production",
    "SECRET_KEY": "s" * 60,
    "ALLOWED_HOSTS": "stats.example.com",
    "FOOTFALL_TRUSTED_PROXIES": "1",
}
LOCAL = {"FOOTFALL_ENV": "local"}  # development mode, as the local stack sets it


def test_development_mode_points_at_the_local_stack() -> None:
    """In development mode (FOOTFALL_ENV=local, set by the stack) no other variable is needed."""
    cfg = load_config(LOCAL, BASE)
    assert cfg.debug is True
    assert cfg.kafka_bootstrap_servers == f"127.0.0.1:{LOCAL_PORTS['kafka']}"
    assert cfg.redis_url == f"redis://127.0.0.1:{LOCAL_PORTS['redis']}/0"
    assert cfg.celery_broker_url == f"redis://127.0.0.1:{LOCAL_PORTS['redis']}/1"
    assert cfg.mongo_url == f"mongodb://127.0.0.1:{LOCAL_PORTS['mongo']}/"
    assert cfg.spark_master == "local[*]"
    assert cfg.database["ENGINE"] == "footfall.sqlite"  # Django's SQLite, making the file's folder when it connects
    assert cfg.database["NAME"] == str(BASE / "var" / "footfall.sqlite3")
    assert cfg.static_root == BASE / "var" / "static"
    assert cfg.archive_url == (BASE / "var" / "archive").as_uri()
    assert cfg.archive_is_local
    assert cfg.secret_key == INSECURE_DEV_SECRET
    assert (cfg.events_topic, cfg.invalid_topic) == ("events", "events.invalid")


def test_production_needs_a_real_secret() -> None:
    with pytest.raises(ConfigError, match="SECRET_KEY"):
        load_config({**PROD, "SECRET_KEY": ""}, BASE)
    with pytest.raises(ConfigError, match="SECRET_KEY: expected a random string of at least 50"):
        load_config({**PROD, "SECRET_KEY": "short"}, BASE)
    with pytest.raises(ConfigError, match="SECRET_KEY"):
        load_config({**PROD, "SECRET_KEY": INSECURE_DEV_SECRET}, BASE)


def test_debug_off_needs_a_secret_even_outside_production() -> None:
    with pytest.raises(ConfigError, match="SECRET_KEY"):
        load_config({**LOCAL, "DEBUG": "false", "ALLOWED_HOSTS": "x"}, BASE)


def test_without_development_mode_every_missing_variable_is_named_at_once() -> None:
    """FOOTFALL_ENV unset is not development mode: one error names SECRET_KEY, ALLOWED_HOSTS and the proxies."""
    with pytest.raises(MissingSettingsError) as err:
        load_config({}, BASE)
    assert err.value.variables == ("SECRET_KEY", "ALLOWED_HOSTS", "FOOTFALL_TRUSTED_PROXIES")
    assert str(err.value).startswith("SECRET_KEY, ALLOWED_HOSTS, FOOTFALL_TRUSTED_PROXIES: required outside")
    assert "FOOTFALL_ENV=local" in str(err.value)


def test_allowed_hosts_alone_no_longer_starts_a_debug_server() -> None:
    """The old hole: only ALLOWED_HOSTS set ran with DEBUG on and the public development key."""
    with pytest.raises(MissingSettingsError) as err:
        load_config({"ALLOWED_HOSTS": "stats.example.com"}, BASE)
    assert err.value.variables == ("SECRET_KEY", "FOOTFALL_TRUSTED_PROXIES")
    with pytest.raises(ConfigError, match="DEBUG: expected false unless FOOTFALL_ENV=local"):
        load_config({**PROD, "FOOTFALL_ENV": "", "DEBUG": "1"}, BASE)


@pytest.mark.parametrize("environment", ["production", "test"])
def test_trusted_proxies_must_be_stated_outside_development(environment: str) -> None:
    """Behind a proxy a silent 0 makes every visitor the proxy; 0 is accepted only when said."""
    env = {**PROD, "FOOTFALL_ENV": environment}
    with pytest.raises(MissingSettingsError) as err:
        load_config({k: v for k, v in env.items() if k != "FOOTFALL_TRUSTED_PROXIES"}, BASE)
    assert err.value.variables == ("FOOTFALL_TRUSTED_PROXIES",)
    assert load_config({**env, "FOOTFALL_TRUSTED_PROXIES": "0"}, BASE).trusted_proxies == 0
    cfg = load_config({k: v for k, v in env.items() if k != "FOOTFALL_ENV"}, BASE)
    assert (cfg.environment, cfg.debug, cfg.trusted_proxies) == ("production", False, 1)


def test_production_refuses_debug() -> None:
    with pytest.raises(ConfigError, match="DEBUG: expected false unless FOOTFALL_ENV=local"):
        load_config({**PROD, "DEBUG": "1"}, BASE)


def test_production_config_is_accepted() -> None:
    cfg = load_config(
        {
            **PROD,
            "KAFKA_BOOTSTRAP_SERVERS": "k1:9092, k2:9092",
            "REDIS_URL": "rediss://:pw@cache.internal:6380/2",
            "MONGO_URL": "mongodb+srv://user:pw@cluster0.example.net/",
            "DATABASE_URL": "postgres://u:p@db.internal:5432/footfall",
            "SPARK_MASTER": "spark://spark-master:7077",
            "ARCHIVE_URL": "s3a://analytics-raw/footfall/",
        },
        BASE,
    )
    assert cfg.debug is False
    assert cfg.allowed_hosts == ("stats.example.com",)
    assert cfg.kafka_bootstrap_servers == "k1:9092,k2:9092"
    assert cfg.celery_broker_url == "rediss://:pw@cache.internal:6380/1"
    assert cfg.database["ENGINE"] == "django.db.backends.postgresql"
    assert cfg.archive_url == "s3a://analytics-raw/footfall"
    assert not cfg.archive_is_local


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("FOOTFALL_ENV", "staging"),
        ("DEBUG", "maybe"),
        ("KAFKA_BOOTSTRAP_SERVERS", "localhost"),
        ("KAFKA_BOOTSTRAP_SERVERS", "localhost:99999"),
        ("KAFKA_BOOTSTRAP_SERVERS", "a:1,,b:2"),
        ("REDIS_URL", "http://localhost:6379"),
        ("REDIS_URL", "redis://localhost:port/0"),
        ("MONGO_URL", "localhost:27017"),
        ("DATABASE_URL", "oracle-ish://nowhere"),
        ("SPARK_MASTER", "local[two]"),
        ("SPARK_MASTER", "mesos://x:5050"),
        ("FOOTFALL_SPARK_DRIVER_MEMORY", "2 GB"),
        ("FOOTFALL_SPARK_SHUFFLE_PARTITIONS", "-1"),
        ("ARCHIVE_URL", "relative/dir"),
        ("ARCHIVE_URL", "ftp://host/dir"),
        ("FOOTFALL_EVENTS_TOPIC", "bad topic!"),
        ("EMAIL_URL", "mail.example.com:25"),
        ("EMAIL_URL", "smtp://mail.example.com:port"),
        ("EMAIL_URL", "smtp://mail.example.com?tls=maybe"),
        ("EMAIL_URL", "file://relative"),
        ("EMAIL_FROM", "nobody"),
        ("EMAIL_FROM", "a@b.example\nBcc: victim@example.com"),
        ("FOOTFALL_PUBLIC_URL", "stats.example.com"),
        ("FOOTFALL_PUBLIC_URL", "https://stats.example.com/?x=1"),
    ],
)
def test_bad_value_names_the_variable(variable: str, value: str) -> None:
    """Each malformed variable fails at start with its own name in the message."""
    with pytest.raises(ConfigError) as err:
        load_config({**LOCAL, variable: value}, BASE)
    assert err.value.variable == variable
    assert str(err.value).startswith(f"{variable}: expected ")
    assert repr(value) in str(err.value) or variable in {"DATABASE_URL"}


@pytest.mark.parametrize("master", ["local", "local[1]", "local[*]", "local[4,2]", "yarn", "k8s://https://k:6443"])
def test_spark_masters_accepted(master: str) -> None:
    assert load_config({**LOCAL, "SPARK_MASTER": master}, BASE).spark_master == master


def test_plain_archive_directory_becomes_a_file_url() -> None:
    assert load_config({**LOCAL, "ARCHIVE_URL": "/data/archive"}, BASE).archive_url == "file:///data/archive"


def test_data_dir_moves_local_defaults() -> None:
    cfg = load_config({**LOCAL, "FOOTFALL_DATA_DIR": "/var/lib/footfall"}, BASE)
    assert cfg.database["NAME"] == "/var/lib/footfall/footfall.sqlite3"
    assert cfg.archive_url == "file:///var/lib/footfall/archive"


def test_installed_package_keeps_data_in_the_users_data_directory() -> None:
    """Without a checkout (base_dir None) nothing defaults to the package's own folder."""
    assert load_config({**LOCAL, "HOME": "/home/ann"}, None).data_dir == Path("/home/ann/.local/share/footfall")
    cfg = load_config({**LOCAL, "HOME": "/home/ann", "XDG_DATA_HOME": "/data/ann"}, None)
    assert cfg.data_dir == Path("/data/ann/footfall")
    assert cfg.database["NAME"] == "/data/ann/footfall/footfall.sqlite3"
    assert load_config({**LOCAL, "HOME": "/home/ann", "XDG_DATA_HOME": "relative"}, None).data_dir.parent == Path(
        "/home/ann/.local/share"
    )


def test_static_root_is_an_absolute_directory() -> None:
    assert load_config({**LOCAL, "FOOTFALL_STATIC_ROOT": "/srv/static"}, BASE).static_root == Path("/srv/static")
    with pytest.raises(ConfigError, match="FOOTFALL_STATIC_ROOT: expected an absolute directory path"):
        load_config({**LOCAL, "FOOTFALL_STATIC_ROOT": "static"}, BASE)


def test_settings_import_creates_nothing(tmp_path: Path) -> None:
    """Importing the settings and setting Django up writes no file or folder, not even the data directory."""
    import subprocess
    import sys

    data = tmp_path / "data"
    code = "import django; django.setup(); from django.conf import settings; print(settings.STATIC_ROOT)"
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env={
            **LOCAL,
            "PATH": "/usr/bin:/bin",
            "FOOTFALL_DATA_DIR": str(data),
            "DJANGO_SETTINGS_MODULE": "footfall_server.settings",
        },
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(data / "static")
    assert list(tmp_path.iterdir()) == []


def test_settings_module_turns_config_errors_into_improperly_configured(tmp_path: Path) -> None:
    """Django refuses to start, and the message names the variable."""
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "manage.py", "check"],
        env={**LOCAL, "PATH": "/usr/bin:/bin", "REDIS_URL": "http://nope", "FOOTFALL_DATA_DIR": str(tmp_path)},
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert proc.returncode != 0
    assert "ImproperlyConfigured: Footfall configuration error: REDIS_URL: expected a URL with scheme" in proc.stderr


def test_topic_settings_default_to_one_node_and_production_values_follow_the_factor() -> None:
    """One replica locally; a replication factor of 3 asks for 2 in-sync replicas unless told otherwise."""
    cfg = load_config(LOCAL, BASE)
    assert (cfg.events_partitions, cfg.replication_factor, cfg.min_insync_replicas) == (6, 1, 1)
    assert cfg.events_retention_ms == 7 * 86_400_000
    three = load_config({**LOCAL, "FOOTFALL_REPLICATION_FACTOR": "3"}, BASE)
    assert three.min_insync_replicas == 2
    with pytest.raises(ConfigError, match=r"^FOOTFALL_MIN_INSYNC_REPLICAS:"):
        load_config({**LOCAL, "FOOTFALL_REPLICATION_FACTOR": "3", "FOOTFALL_MIN_INSYNC_REPLICAS": "4"}, BASE)


def test_events_retention_must_cover_the_realtime_window() -> None:
    """A retention shorter than the realtime window plus an hour is refused, naming both settings; -1 is for ever."""
    with pytest.raises(ConfigError, match=r"^FOOTFALL_EVENTS_RETENTION_MS:.*FOOTFALL_REALTIME_RETENTION_HOURS=48"):
        load_config({**LOCAL, "FOOTFALL_EVENTS_RETENTION_MS": str(48 * 3_600_000)}, BASE)
    assert load_config({**LOCAL, "FOOTFALL_EVENTS_RETENTION_MS": "-1"}, BASE).events_retention_ms == -1
    enough = 49 * 3_600_000
    assert load_config({**LOCAL, "FOOTFALL_EVENTS_RETENTION_MS": str(enough)}, BASE).events_retention_ms == enough
    # A longer realtime window raises the default with it.
    long_window = load_config({**LOCAL, "FOOTFALL_REALTIME_RETENTION_HOURS": str(24 * 10)}, BASE)
    assert long_window.events_retention_ms == (24 * 10 + 1) * 3_600_000


def test_realtime_shards_default_to_redis_url_and_keep_their_order() -> None:
    """FOOTFALL_REALTIME_REDIS_URLS lists the speed layer's shards in order; unset, REDIS_URL is the one."""
    assert load_config(LOCAL, BASE).realtime_redis_urls == (f"redis://127.0.0.1:{LOCAL_PORTS['redis']}/0",)
    urls = "redis://r2:6379/0, redis://r1:6379/0,redis://r3:6379/0"
    assert load_config({**LOCAL, "FOOTFALL_REALTIME_REDIS_URLS": urls}, BASE).realtime_redis_urls == (
        "redis://r2:6379/0", "redis://r1:6379/0", "redis://r3:6379/0"
    )  # fmt: skip


@pytest.mark.parametrize("urls", ["redis://r1:6379/0,http://r2:6379/0", "redis://r1:6379/0,redis://r1:6379/0"])
def test_realtime_shards_refuse_other_schemes_and_repeats(urls: str) -> None:
    with pytest.raises(ConfigError, match=r"^FOOTFALL_REALTIME_REDIS_URLS: expected"):
        load_config({**LOCAL, "FOOTFALL_REALTIME_REDIS_URLS": urls}, BASE)


def test_email_goes_to_files_in_development_and_to_smtp_as_configured() -> None:
    local = load_config(LOCAL, BASE)
    assert (local.email.backend, local.email.path) == ("file", BASE / "var" / "mail")
    assert local.public_url == f"http://127.0.0.1:{LOCAL_PORTS['web']}"
    prod = load_config(PROD, BASE)
    assert (prod.email.backend, prod.email.host, prod.email.port) == ("smtp", "localhost", 25)
    assert prod.public_url is None  # links in emails need FOOTFALL_PUBLIC_URL
    env = {"EMAIL_URL": "smtp://alerts%40ex.com:p%3Ass@mail.ex.com:587", "EMAIL_FROM": "Stats <stats@ex.com>"}
    cfg = load_config({**PROD, **env, "FOOTFALL_PUBLIC_URL": "https://stats.ex.com/"}, BASE)
    assert (cfg.email.user, cfg.email.password, cfg.email.starttls, cfg.email.ssl) == (
        "alerts@ex.com",
        "p:ss",
        True,
        False,
    )
    assert "p:ss" not in repr(cfg.email)
    assert cfg.email.sender == "Stats <stats@ex.com>"
    assert cfg.public_url == "https://stats.ex.com"
    tls = load_config({**PROD, "EMAIL_URL": "smtps://mail.ex.com"}, BASE).email
    assert (tls.port, tls.ssl, tls.starttls) == (465, True, False)
    plain = load_config({**PROD, "EMAIL_URL": "smtp://relay.internal:587?tls=none"}, BASE).email
    assert plain.starttls is False


def test_the_development_key_never_signs_for_a_public_host() -> None:
    """FOOTFALL_ENV=local with ALLOWED_HOSTS naming a host others reach needs a SECRET_KEY of its own."""
    assert load_config({**LOCAL, "ALLOWED_HOSTS": "localhost,127.0.0.1,app.localhost"}, BASE).secret_key == (
        INSECURE_DEV_SECRET
    )
    with pytest.raises(ConfigError, match=r"SECRET_KEY: .*'stats\.example\.com', which is not this machine"):
        load_config({**LOCAL, "ALLOWED_HOSTS": "localhost,stats.example.com"}, BASE)
    with pytest.raises(ConfigError, match="SECRET_KEY"):
        load_config({**LOCAL, "ALLOWED_HOSTS": "*"}, BASE)
    assert load_config({**LOCAL, "ALLOWED_HOSTS": "stats.example.com", "SECRET_KEY": "k" * 60}, BASE).secret_key


@pytest.mark.parametrize(("proxies", "header"), [("0", "None"), ("1", "('HTTP_X_FORWARDED_PROTO', 'https')")])
def test_the_forwarded_scheme_is_trusted_only_behind_a_proxy(proxies: str, header: str) -> None:
    """With no proxy in front, a client's own X-Forwarded-Proto must not make a request secure."""
    import os
    import subprocess
    import sys

    env = {
        **os.environ,
        **PROD,
        "FOOTFALL_TRUSTED_PROXIES": proxies,
        "DJANGO_SETTINGS_MODULE": "footfall_server.settings",
    }
    program = "from django.conf import settings; print(getattr(settings, 'SECURE_PROXY_SSL_HEADER', None))"
    out = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=60,
                         cwd=Path(__file__).resolve().parents[2])  # fmt: skip
    assert out.stdout.strip().splitlines()[-1] == header, out.stderr[-2000:]


def test_tracker_and_collect_paths_a_deployment_chooses() -> None:
    cfg = load_config({**LOCAL, "FOOTFALL_TRACKER_PATH": "/js/site.js", "FOOTFALL_COLLECT_PATH": "/e/site"}, BASE)
    assert (cfg.tracker_path, cfg.collect_path) == ("/js/site.js", "/e/site")
    default = load_config(LOCAL, BASE)
    assert (default.tracker_path, default.collect_path) == ("/footfall.js", "/collect")
    for bad in ("js/site.js", "/api/v1/x", "/dashboard/x", "/static/x.js", "/a/../b", "/a b", "/a//b", "/x?y=1"):
        with pytest.raises(ConfigError, match="FOOTFALL_TRACKER_PATH"):
            load_config({**LOCAL, "FOOTFALL_TRACKER_PATH": bad}, BASE)


def test_forwarding_proxies_are_networks() -> None:
    cfg = load_config({**LOCAL, "FOOTFALL_FORWARDING_PROXIES": "192.0.2.0/24, 2001:db8::1"}, BASE)
    assert [str(n) for n in cfg.forwarding_proxies] == ["192.0.2.0/24", "2001:db8::1/128"]
    assert load_config(LOCAL, BASE).forwarding_proxies == ()
    for bad in ("*", "192.0.2.1/24", "not-a-network"):
        with pytest.raises(ConfigError, match="FOOTFALL_FORWARDING_PROXIES"):
            load_config({**LOCAL, "FOOTFALL_FORWARDING_PROXIES": bad}, BASE)
