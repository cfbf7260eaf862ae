"""Kafka TLS/SASL settings: one validation for the server and host sites, clear errors, librdkafka's keys."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import KafkaError

from footfall.config import ConfigError, load_config
from footfall.kafka_client import consumer_config, fail_on_refusal
from footfall_capture.kafka import client_config, producer_config
from footfall_capture.kafka_security import KafkaAuthenticationFailed, KafkaSecurity, KafkaSecurityError, load_security
from footfall_capture.settings import SettingsError, load_settings

LOCAL = {"FOOTFALL_ENV": "local"}


@pytest.fixture
def pem(tmp_path: Path) -> Path:
    path = tmp_path / "ca.pem"
    path.write_text("-----BEGIN CERTIFICATE-----\n")
    return path


def test_plaintext_by_default() -> None:
    """Nothing set: PLAINTEXT, and no SASL or TLS key reaches librdkafka."""
    cfg = load_config(LOCAL, None)
    assert cfg.kafka_security == KafkaSecurity()
    assert client_config(cfg.kafka)["security.protocol"] == "plaintext"
    assert not any(key.startswith(("sasl.", "ssl.")) for key in producer_config(cfg.kafka))


def test_sasl_ssl_reaches_every_client(pem: Path) -> None:
    """SASL_SSL with SCRAM: producers, consumers and admin clients all get the same entries."""
    env = {**LOCAL, "KAFKA_SECURITY_PROTOCOL": "SASL_SSL", "KAFKA_SASL_USERNAME": "footfall",
           "KAFKA_SASL_PASSWORD": "s3cret", "KAFKA_SSL_CA_LOCATION": str(pem)}  # fmt: skip
    cfg = load_config(env, None)
    expected = {
        "security.protocol": "sasl_ssl",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "footfall",
        "sasl.password": "s3cret",
        "ssl.ca.location": str(pem),
    }
    for conf in (client_config(cfg.kafka), producer_config(cfg.kafka), consumer_config(cfg, "g")):
        assert expected.items() <= conf.items()
    assert "s3cret" not in repr(cfg)


def test_password_from_a_file(tmp_path: Path) -> None:
    """KAFKA_SASL_PASSWORD_FILE keeps the secret out of the environment; its final newline is not part of it."""
    secret = tmp_path / "password"
    secret.write_text("from-file\n")
    env = {"KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT", "KAFKA_SASL_MECHANISM": "plain",
           "KAFKA_SASL_USERNAME": "u", "KAFKA_SASL_PASSWORD_FILE": str(secret)}  # fmt: skip
    security = load_security(env.get, "KAFKA_")
    assert (security.mechanism, security.password) == ("PLAIN", "from-file")


@pytest.mark.parametrize(
    ("env", "variable"),
    [
        ({"KAFKA_SECURITY_PROTOCOL": "TLS"}, "KAFKA_SECURITY_PROTOCOL"),
        ({"KAFKA_SECURITY_PROTOCOL": "SASL_SSL", "KAFKA_SASL_PASSWORD": "p"}, "KAFKA_SASL_USERNAME"),
        ({"KAFKA_SECURITY_PROTOCOL": "SASL_SSL", "KAFKA_SASL_USERNAME": "u"}, "KAFKA_SASL_PASSWORD"),
        (
            {
                "KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
                "KAFKA_SASL_USERNAME": "u",
                "KAFKA_SASL_PASSWORD": "p",
                "KAFKA_SASL_MECHANISM": "GSSAPI",
            },
            "KAFKA_SASL_MECHANISM",
        ),
        (
            {
                "KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
                "KAFKA_SASL_USERNAME": "u",
                "KAFKA_SASL_PASSWORD": "p",
                "KAFKA_SASL_PASSWORD_FILE": "/etc/pw",
            },
            "KAFKA_SASL_PASSWORD_FILE",
        ),
        (
            {
                "KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
                "KAFKA_SASL_USERNAME": "u",
                "KAFKA_SASL_PASSWORD_FILE": "/nonexistent/pw",
            },
            "KAFKA_SASL_PASSWORD_FILE",
        ),
        ({"KAFKA_SASL_USERNAME": "u"}, "KAFKA_SASL_USERNAME"),  # SASL settings on a PLAINTEXT cluster
        (
            {
                "KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
                "KAFKA_SASL_USERNAME": "u",
                "KAFKA_SASL_PASSWORD": "p",
                "KAFKA_SSL_CA_LOCATION": "/etc/ca.pem",
            },
            "KAFKA_SSL_CA_LOCATION",
        ),
        ({"KAFKA_SECURITY_PROTOCOL": "SSL", "KAFKA_SSL_CA_LOCATION": "/nonexistent/ca.pem"}, "KAFKA_SSL_CA_LOCATION"),
        ({"KAFKA_SECURITY_PROTOCOL": "SSL", "KAFKA_SSL_CA_LOCATION": "ca.pem"}, "KAFKA_SSL_CA_LOCATION"),
    ],
)
def test_bad_settings_name_the_setting(env: dict[str, str], variable: str) -> None:
    """Each invalid value or combination fails at start, naming the setting to fix."""
    with pytest.raises(ConfigError, match=f"^{variable}:") as caught:
        load_config({**LOCAL, **env}, None)
    assert caught.value.variable == variable
    assert "'p'" not in str(caught.value)  # a password is never echoed


def test_mutual_tls_needs_certificate_and_key(pem: Path) -> None:
    """A client certificate without its key (or the reverse) names the one missing."""
    env = {"KAFKA_SECURITY_PROTOCOL": "SSL", "KAFKA_SSL_CERTIFICATE_LOCATION": str(pem)}
    with pytest.raises(KafkaSecurityError, match=r"^KAFKA_SSL_KEY_LOCATION:"):
        load_security(env.get, "KAFKA_")
    both = {**env, "KAFKA_SSL_KEY_LOCATION": str(pem)}
    assert load_security(both.get, "KAFKA_").librdkafka()["ssl.key.location"] == str(pem)


def test_host_site_reads_its_own_names(pem: Path) -> None:
    """The capture library reads FOOTFALL_KAFKA_* (Django settings first) and names those in errors."""
    base = {"FOOTFALL_SITE_ID": "s", "FOOTFALL_KAFKA_BOOTSTRAP_SERVERS": "k:9093", "FOOTFALL_REDIS_URL": "redis://r/0"}
    django = {**base, "FOOTFALL_KAFKA_SECURITY_PROTOCOL": "SSL", "FOOTFALL_KAFKA_SSL_CA_LOCATION": str(pem)}
    settings = load_settings(django, {"KAFKA_SECURITY_PROTOCOL": "SASL_SSL"})
    assert settings.kafka.security.librdkafka() == {"security.protocol": "ssl", "ssl.ca.location": str(pem)}
    with pytest.raises(SettingsError, match="FOOTFALL_KAFKA_SASL_USERNAME: expected a user name"):
        load_settings({**base, "FOOTFALL_KAFKA_SECURITY_PROTOCOL": "SASL_SSL"}, {})


def test_refusals_are_named_and_fatal_to_consumers() -> None:
    """A wrong password or an untrusted certificate raises naming the settings; a broker that is down does not."""
    security = KafkaSecurity("SASL_SSL", "SCRAM-SHA-512", "u", "p")
    on_error = fail_on_refusal(security)
    with pytest.raises(KafkaAuthenticationFailed, match=r"KAFKA_SASL_USERNAME/KAFKA_SASL_PASSWORD"):
        on_error(KafkaError(KafkaError._AUTHENTICATION, "SASL authentication error: invalid credentials"))
    with pytest.raises(KafkaAuthenticationFailed, match="KAFKA_SSL_CA_LOCATION"):
        on_error(KafkaError(KafkaError._SSL, "SSL handshake failed: certificate verify failed"))
    on_error(KafkaError(KafkaError._SSL, "SSL handshake failed: Disconnected"))  # a cut connection: retried
    on_error(KafkaError(KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down"))
    host = KafkaSecurity("SASL_SSL", "PLAIN", "u", "p", prefix="FOOTFALL_KAFKA_")
    assert "FOOTFALL_KAFKA_SASL_PASSWORD" in str(host.describe(KafkaError(KafkaError._AUTHENTICATION, "x")))
