"""A Kafka broker with a SASL_SSL listener (SCRAM-SHA-512 and PLAIN) and ACLs, made and run by the tests.

The certificates are made here (a CA, and the broker's certificate for 127.0.0.1/localhost,
as a PEM keystore), the SCRAM user is created when the log is formatted, ACLs are enforced
(``StandardAuthorizer``: the server's user and the plaintext controller and inter-broker
listeners' ``ANONYMOUS`` are super users, as docs/security.md says), and the broker runs
from the local stack's Kafka jars as a subprocess on ``FOOTFALL_TEST_SECURE_KAFKA_PORT``
(default: the stack's Kafka port + 20; + 21 is its controller, + 22 its internal listener).
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from deploy.local.services import Kafka, StackConfig
from footfall_capture.kafka import KafkaSettings, client_config
from footfall_capture.kafka_security import KafkaSecurity

USER = "footfall"
PASSWORD = "correct-horse-battery"

SERVER_PROPERTIES = """\
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:{cport}
listeners=SECURE://127.0.0.1:{port},CONTROLLER://127.0.0.1:{cport},INTERNAL://127.0.0.1:{iport}
advertised.listeners=SECURE://127.0.0.1:{port},INTERNAL://127.0.0.1:{iport}
controller.listener.names=CONTROLLER
inter.broker.listener.name=INTERNAL
listener.security.protocol.map=SECURE:SASL_SSL,CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT
sasl.enabled.mechanisms=SCRAM-SHA-512,PLAIN
listener.name.secure.scram-sha-512.sasl.jaas.config=\
org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.secure.plain.sasl.jaas.config=\
org.apache.kafka.common.security.plain.PlainLoginModule required user_{user}="{password}";
listener.name.secure.ssl.keystore.type=PEM
listener.name.secure.ssl.keystore.location={keystore}
log.dirs={data}
auto.create.topics.enable=false
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:{user};User:ANONYMOUS
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
"""


@dataclass(frozen=True)
class Certificates:
    ca: Path  # the CA clients trust
    other_ca: Path  # a CA that signed nothing the broker shows
    keystore: Path  # the broker's key and certificate (PEM)


def make_certificates(directory: Path) -> Certificates:
    """A CA, a second unrelated CA, and the broker's certificate for 127.0.0.1 and localhost."""
    directory.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.UTC)

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    def ca(cn: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (
            x509.CertificateBuilder().subject_name(name(cn)).issuer_name(name(cn)).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(hours=1))
            .not_valid_after(now + dt.timedelta(days=2))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256())
        )  # fmt: skip
        return key, cert

    ca_key, ca_cert = ca("footfall test CA")
    _other_key, other_cert = ca("an untrusted CA")
    key = ec.generate_private_key(ec.SECP256R1())
    san = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    cert = (
        x509.CertificateBuilder().subject_name(name("localhost")).issuer_name(ca_cert.subject)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1)).not_valid_after(now + dt.timedelta(days=2))
        .add_extension(x509.SubjectAlternativeName(san), critical=False)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    pem = serialization.Encoding.PEM
    certs = Certificates(directory / "ca.pem", directory / "other-ca.pem", directory / "broker.pem")
    certs.ca.write_bytes(ca_cert.public_bytes(pem))
    certs.other_ca.write_bytes(other_cert.public_bytes(pem))
    # Kafka's PEM keystore: an unencrypted PKCS#8 key, then the certificate chain.
    key_pem = key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    certs.keystore.write_bytes(key_pem + cert.public_bytes(pem) + ca_cert.public_bytes(pem))
    return certs


def secure_port(env: Mapping[str, str]) -> int:
    raw = env.get("FOOTFALL_TEST_SECURE_KAFKA_PORT")
    return int(raw) if raw else StackConfig.from_env(env).kafka_port + 20


class SecureBroker:
    """One KRaft node whose clients must use SASL_SSL; started by :meth:`start`, ended by :meth:`stop`."""

    def __init__(self, home: Path, port: int) -> None:
        self.home, self.port = home, port
        self.kafka = Kafka(StackConfig.from_env(os.environ))
        self.certs = make_certificates(home / "certs")
        self.proc: subprocess.Popen | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def security(
        self, password: str = PASSWORD, mechanism: str = "SCRAM-SHA-512", ca: Path | None = None
    ) -> dict[str, str]:
        """The server's environment variables for a client of this broker."""
        return {
            "KAFKA_BOOTSTRAP_SERVERS": self.bootstrap,
            "KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
            "KAFKA_SASL_MECHANISM": mechanism,
            "KAFKA_SASL_USERNAME": USER,
            "KAFKA_SASL_PASSWORD": password,
            "KAFKA_SSL_CA_LOCATION": str(ca or self.certs.ca),
        }

    def _java(self, main: str, *args: str, heap: str = "256m") -> list[str]:
        return [shutil.which("java") or "java", f"-Xmx{heap}", "-XX:+UseG1GC", "-Djava.awt.headless=true",
                f"-Dlog4j2.configurationFile={self.home / 'log4j2.properties'}", "-cp", f"{self.kafka.libs}/*",
                main, *args]  # fmt: skip

    def start(self, timeout: float = 120.0) -> None:
        properties = self.home / "server.properties"
        properties.write_text(
            SERVER_PROPERTIES.format(port=self.port, cport=self.port + 1, iport=self.port + 2, user=USER,
                                     password=PASSWORD, keystore=self.certs.keystore, data=self.home / "data")
        )  # fmt: skip
        log4j = Path(__file__).resolve().parents[3] / "deploy" / "local" / "kafka" / "log4j2.properties"
        (self.home / "log4j2.properties").write_text(log4j.read_text())
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        subprocess.run(
            self._java("kafka.tools.StorageTool", "format", "--standalone", "-t", cluster_id, "-c", str(properties),
                       "--add-scram", f"SCRAM-SHA-512=[name={USER},password={PASSWORD}]"),
            check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        log = (self.home / "broker.log").open("wb")
        self.proc = subprocess.Popen(
            self._java("kafka.Kafka", str(properties), heap="512m"), stdout=log, stderr=subprocess.STDOUT
        )
        admin = AdminClient(client_config(self.settings()))
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the secure broker exited: see {self.home / 'broker.log'}")
            try:
                if admin.list_topics(timeout=2).brokers:
                    return
            except KafkaException:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"the secure broker did not answer in {timeout:.0f}s: see {self.home / 'broker.log'}"
                )
            time.sleep(0.5)

    def settings(self) -> KafkaSettings:
        """Client settings with the right credentials (SCRAM-SHA-512)."""
        security = KafkaSecurity("SASL_SSL", "SCRAM-SHA-512", USER, PASSWORD, ca_location=str(self.certs.ca))
        return KafkaSettings(self.bootstrap, security=security)

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self.proc = None
