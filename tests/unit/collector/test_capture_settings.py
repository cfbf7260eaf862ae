"""The capture library's settings: HTTP by default with a collector and an ingest key, Kafka for
sites that name only Kafka, and each transport's settings refused in the other."""

from __future__ import annotations

from pathlib import Path

import pytest

from footfall_capture.settings import SettingsError, load_settings

KEY = "ffk_abcdefgh_" + "s" * 43
HTTP = {
    "FOOTFALL_SITE_ID": "shop",
    "FOOTFALL_COLLECTOR_URL": "https://footfall.example.com",
    "FOOTFALL_INGEST_KEY": KEY,
}
KAFKA = {"FOOTFALL_SITE_ID": "shop", "FOOTFALL_KAFKA_BOOTSTRAP_SERVERS": "k:9092", "FOOTFALL_REDIS_URL": "redis://r/0"}


def test_http_is_the_default_and_needs_no_store() -> None:
    settings = load_settings(HTTP, {})
    assert settings.transport == "http"
    assert settings.collector is not None
    assert (settings.collector.url, settings.collector.site_id, settings.collector.key) == (
        "https://footfall.example.com", "shop", KEY,
    )  # fmt: skip
    assert (settings.kafka, settings.redis_url) == (None, None)
    assert KEY not in repr(settings)  # the key stays out of logs and tracebacks


def test_the_key_may_come_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "key"
    path.write_text(KEY + "\n")
    env = {"FOOTFALL_INGEST_KEY_FILE": str(path)}
    settings = load_settings({k: v for k, v in HTTP.items() if k != "FOOTFALL_INGEST_KEY"}, env)
    assert settings.collector is not None
    assert settings.collector.key == KEY
    with pytest.raises(SettingsError, match="give one of them, not both"):
        load_settings(HTTP, env)
    with pytest.raises(SettingsError, match=r"FOOTFALL_INGEST_KEY_FILE: .*No such file"):
        load_settings({"FOOTFALL_SITE_ID": "shop", "FOOTFALL_COLLECTOR_URL": "https://f.example"},
                      {"FOOTFALL_INGEST_KEY_FILE": str(tmp_path / "missing")})  # fmt: skip


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"FOOTFALL_INGEST_KEY": None}, r"FOOTFALL_INGEST_KEY \(or FOOTFALL_INGEST_KEY_FILE\): required"),
        ({"FOOTFALL_INGEST_KEY": "short"}, "FOOTFALL_INGEST_KEY: expected an ingest key"),
        ({"FOOTFALL_COLLECTOR_URL": "http://footfall.example.com"}, "must be https://"),
        ({"FOOTFALL_COLLECTOR_URL": "footfall.example.com"}, "must be https://"),
        ({"FOOTFALL_REDIS_URL": "redis://r/0"}, "FOOTFALL_REDIS_URL: used by the kafka transport only"),
        ({"FOOTFALL_DROP_BOTS": True}, "FOOTFALL_DROP_BOTS: used by the kafka transport only"),
        ({"FOOTFALL_TRANSPORT": "carrier-pigeon"}, "FOOTFALL_TRANSPORT: expected one of http, kafka"),
    ],
)
def test_bad_http_settings_are_named(changes: dict[str, object], message: str) -> None:
    django = {**HTTP, **changes}
    with pytest.raises(SettingsError, match=message):
        load_settings({k: v for k, v in django.items() if v is not None}, {})


def test_plain_http_only_to_this_machine() -> None:
    settings = load_settings({**HTTP, "FOOTFALL_COLLECTOR_URL": "http://127.0.0.1:8000"}, {})
    assert settings.collector is not None
    assert settings.collector.url == "http://127.0.0.1:8000"


def test_a_site_naming_only_kafka_keeps_the_kafka_transport() -> None:
    settings = load_settings(KAFKA, {})
    assert settings.transport == "kafka"
    assert settings.kafka is not None
    assert settings.kafka.bootstrap_servers == "k:9092"
    assert settings.collector is None
    with pytest.raises(SettingsError, match="FOOTFALL_INGEST_KEY: used by the http transport only"):
        load_settings({**KAFKA, "FOOTFALL_INGEST_KEY": KEY, "FOOTFALL_TRANSPORT": "kafka"}, {})
    with pytest.raises(SettingsError, match="FOOTFALL_KAFKA_BOOTSTRAP_SERVERS: used by the kafka transport only"):
        load_settings({**KAFKA, **HTTP}, {})  # both named: HTTP, and Kafka's settings are refused


def test_a_false_setting_of_the_other_transport_is_refused_too() -> None:
    with pytest.raises(SettingsError, match="FOOTFALL_DROP_BOTS: used by the kafka transport only"):
        load_settings({**HTTP, "FOOTFALL_DROP_BOTS": False}, {})


def test_the_kafka_transport_keeps_the_query_parameters_it_names() -> None:
    """With Kafka the host enriches, so it keeps the site's parameters itself; with HTTP the
    server's site settings decide."""
    assert load_settings({**KAFKA, "FOOTFALL_QUERY_PARAMS": "Page, q"}, {}).query_params == frozenset({"page", "q"})
    assert load_settings(KAFKA, {}).query_params == frozenset()
    with pytest.raises(SettingsError, match="FOOTFALL_QUERY_PARAMS: 'fbclid' is a tracking parameter"):
        load_settings({**KAFKA, "FOOTFALL_QUERY_PARAMS": ["fbclid"]}, {})
    with pytest.raises(SettingsError, match="FOOTFALL_QUERY_PARAMS: used by the kafka transport only"):
        load_settings({**HTTP, "FOOTFALL_QUERY_PARAMS": "page"}, {})
