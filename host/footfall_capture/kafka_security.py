"""How every Kafka client authenticates and encrypts: TLS and SASL settings in one home.

:func:`load_security` validates the settings (the server reads them as ``KAFKA_*``, a host
site as ``FOOTFALL_KAFKA_*``) and :class:`KafkaSecurity` turns them into librdkafka's
``security.protocol``/``sasl.*``/``ssl.*`` entries. librdkafka reports a wrong password or an
untrusted certificate only asynchronously, through its error callback; :func:`security_failure`
turns such an error into a message naming the settings to fix.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the settings load in hosts without confluent-kafka (the HTTP transport)
    from confluent_kafka import KafkaError

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN")
# The settings' names without their prefix (KAFKA_ on the server, FOOTFALL_KAFKA_ in a host site).
SETTINGS = (
    "SECURITY_PROTOCOL",
    "SASL_MECHANISM",
    "SASL_USERNAME",
    "SASL_PASSWORD",
    "SASL_PASSWORD_FILE",
    "SSL_CA_LOCATION",
    "SSL_CERTIFICATE_LOCATION",
    "SSL_KEY_LOCATION",
)
_SASL_SETTINGS = ("SASL_MECHANISM", "SASL_USERNAME", "SASL_PASSWORD", "SASL_PASSWORD_FILE")
_SSL_SETTINGS = ("SSL_CA_LOCATION", "SSL_CERTIFICATE_LOCATION", "SSL_KEY_LOCATION")


class KafkaSecurityError(ValueError):
    """A Kafka security setting is missing, malformed or does not fit the others; names it."""

    def __init__(self, variable: str, expected: str) -> None:
        super().__init__(f"{variable}: expected {expected}")
        self.variable = variable
        self.expected = expected


class KafkaAuthenticationFailed(RuntimeError):
    """The brokers refused the client's credentials or certificates; the message names the settings."""


@dataclass(frozen=True, slots=True)
class KafkaSecurity:
    """Validated TLS/SASL settings; ``prefix`` is how they are named where they were read."""

    protocol: str = "PLAINTEXT"
    mechanism: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    ca_location: str | None = None
    certificate_location: str | None = None
    key_location: str | None = None
    prefix: str = "KAFKA_"

    @property
    def uses_sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    def librdkafka(self) -> dict[str, str]:
        """librdkafka's entries for these settings (nothing but the protocol for PLAINTEXT)."""
        conf = {"security.protocol": self.protocol.lower()}
        if self.uses_sasl:
            conf |= {"sasl.mechanism": str(self.mechanism), "sasl.username": str(self.username),
                     "sasl.password": str(self.password)}  # fmt: skip
        optional = {
            "ssl.ca.location": self.ca_location,
            "ssl.certificate.location": self.certificate_location,
            "ssl.key.location": self.key_location,
        }
        conf |= {key: value for key, value in optional.items() if value}
        return conf

    def describe(self, err: KafkaError) -> str | None:
        """A message naming the settings to fix when ``err`` is an authentication or TLS
        failure; None for any other error (an unreachable broker, a timeout)."""
        from confluent_kafka import KafkaError

        p = self.prefix
        if err.code() == KafkaError._AUTHENTICATION:
            return f"Kafka authentication failed ({p}SASL_USERNAME/{p}SASL_PASSWORD, {p}SASL_MECHANISM): {err.str()}"
        if err.code() == KafkaError._SSL:
            return (
                f"Kafka TLS handshake failed ({p}SSL_CA_LOCATION, {p}SSL_CERTIFICATE_LOCATION, "
                f"{p}SSL_KEY_LOCATION, {p}SECURITY_PROTOCOL): {err.str()}"
            )
        return None

    def is_definitive(self, err: KafkaError) -> bool:
        """True for a refusal that retrying cannot cure: wrong credentials or an untrusted
        certificate (a connection cut mid-handshake, also an ``_SSL`` error, is not)."""
        from confluent_kafka import KafkaError

        if err.code() == KafkaError._AUTHENTICATION:
            return True
        return err.code() == KafkaError._SSL and "certificate" in err.str().lower()


def load_security(get: Callable[[str], str | None], prefix: str) -> KafkaSecurity:
    """Validate the security settings ``get(prefix + name)`` returns (None or "" when unset).

    Raises :class:`KafkaSecurityError` naming the first setting at fault: an unknown protocol
    or mechanism, SASL without a username or password, a password given twice, SASL or TLS
    settings with a protocol that does not use them, a file that cannot be read, or a client
    certificate without its key (or the reverse)."""

    def value(name: str) -> str | None:
        raw = get(prefix + name)
        return raw.strip() if isinstance(raw, str) and raw.strip() else None

    protocol = (value("SECURITY_PROTOCOL") or "PLAINTEXT").upper()
    if protocol not in PROTOCOLS:
        raise KafkaSecurityError(prefix + "SECURITY_PROTOCOL", f"one of {', '.join(PROTOCOLS)} (got {protocol!r})")
    sasl = protocol.startswith("SASL_")
    tls = protocol in ("SSL", "SASL_SSL")
    for name in _SASL_SETTINGS if not sasl else ():
        if value(name):
            raise KafkaSecurityError(
                prefix + name, f"unset unless {prefix}SECURITY_PROTOCOL is SASL_SSL or SASL_PLAINTEXT"
            )
    for name in _SSL_SETTINGS if not tls else ():
        if value(name):
            raise KafkaSecurityError(prefix + name, f"unset unless {prefix}SECURITY_PROTOCOL is SSL or SASL_SSL")
    files = {name: _readable(prefix + name, value(name)) for name in _SSL_SETTINGS}
    if bool(files["SSL_CERTIFICATE_LOCATION"]) != bool(files["SSL_KEY_LOCATION"]):
        missing = "SSL_KEY_LOCATION" if files["SSL_CERTIFICATE_LOCATION"] else "SSL_CERTIFICATE_LOCATION"
        raise KafkaSecurityError(prefix + missing, "a PEM file too: mutual TLS needs a client certificate and its key")
    mechanism = username = password = None
    if sasl:
        mechanism = (value("SASL_MECHANISM") or MECHANISMS[0]).upper()
        if mechanism not in MECHANISMS:
            raise KafkaSecurityError(prefix + "SASL_MECHANISM", f"one of {', '.join(MECHANISMS)} (got {mechanism!r})")
        username = value("SASL_USERNAME")
        if not username:
            raise KafkaSecurityError(
                prefix + "SASL_USERNAME", f"a user name, required with {prefix}SECURITY_PROTOCOL={protocol}"
            )
        password = _password(prefix, get(prefix + "SASL_PASSWORD") or None, value("SASL_PASSWORD_FILE"), protocol)
    return KafkaSecurity(
        protocol=protocol,
        mechanism=mechanism,
        username=username,
        password=password,
        ca_location=files["SSL_CA_LOCATION"],
        certificate_location=files["SSL_CERTIFICATE_LOCATION"],
        key_location=files["SSL_KEY_LOCATION"],
        prefix=prefix,
    )


def _password(prefix: str, direct: str | None, path: str | None, protocol: str) -> str:
    if direct and path:
        raise KafkaSecurityError(
            prefix + "SASL_PASSWORD_FILE", f"unset when {prefix}SASL_PASSWORD is set (one of the two)"
        )
    if direct:
        return direct
    if not path:
        raise KafkaSecurityError(
            prefix + "SASL_PASSWORD",
            f"a password (or {prefix}SASL_PASSWORD_FILE), required with {prefix}SECURITY_PROTOCOL={protocol}",
        )
    try:
        secret = Path(path).read_text(encoding="utf-8").rstrip("\r\n")
    except OSError as exc:
        raise KafkaSecurityError(prefix + "SASL_PASSWORD_FILE", f"a readable file ({exc.strerror}: {path})") from None
    if not secret:
        raise KafkaSecurityError(prefix + "SASL_PASSWORD_FILE", f"a file holding the password ({path} is empty)")
    return secret


def _readable(variable: str, path: str | None) -> str | None:
    if path is None:
        return None
    if not Path(path).is_absolute():
        raise KafkaSecurityError(variable, f"an absolute path to a PEM file (got {path!r})")
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise KafkaSecurityError(variable, f"a readable PEM file ({exc.strerror}: {path})") from None
    return path
