"""Webhooks reach public addresses only unless the operator allows a network: real local HTTP
receivers on loopback, deliveries through a real Celery worker, the channel API, and a
resolver that answers differently on a second call (DNS rebinding)."""

from __future__ import annotations

import datetime as dt
import ipaddress
import socket
import ssl
from collections.abc import Sequence
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from django.core.exceptions import ValidationError
from django.test import Client

from alerts.delivery import DeliveryError, post_webhook
from alerts.egress import SETTING
from alerts.models import WEBHOOK, Channel, Delivery
from alerts.notify import episode_changed
from tests.integration.alerts.conftest import make_episode, send, webhook_channel
from tests.integration.api.conftest import SiteKey

pytestmark = pytest.mark.django_db(transaction=True)

ONLY_127_0_0_1 = (ipaddress.ip_network("127.0.0.1/32"),)


def test_a_receiver_on_loopback_is_refused_by_default(site, receiver, worker) -> None:
    """The default setting: nothing reaches 127.0.0.1, the delivery fails at once, naming the
    address and the setting."""
    hook = receiver(200)
    [delivery] = episode_changed(make_episode(webhook_channel(site, hook.url)), "opened")
    assert worker.wait_final() == ["SUCCESS"]

    assert hook.requests == []
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.response_status) == (Delivery.FAILED, 1, None)
    assert "127.0.0.1 is a loopback address" in delivery.last_error
    assert SETTING in delivery.last_error


def test_a_receiver_on_an_allowed_network_is_reached(site, receiver, worker, allow_loopback) -> None:
    """With 127.0.0.0/8 allowed the same delivery is sent."""
    hook = receiver(200)
    [delivery] = episode_changed(make_episode(webhook_channel(site, hook.url)), "opened")
    assert worker.wait_final() == ["SUCCESS"]

    assert len(hook.requests) == 1
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.response_status) == (Delivery.SENT, 1, 200)


def test_a_name_resolving_to_loopback_is_refused(site, receiver, worker) -> None:
    """``localhost`` is a name: accepted as a channel's host, refused when sending."""
    hook = receiver(200)
    channel = webhook_channel(site, hook.url.replace("127.0.0.1", "localhost"))
    channel.full_clean()  # names are not judged up front: their DNS answer can change
    [delivery] = episode_changed(make_episode(channel), "opened")
    assert worker.wait_final() == ["SUCCESS"]

    assert hook.requests == []
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == (Delivery.FAILED, 1)
    assert "localhost (" in delivery.last_error
    assert "loopback address" in delivery.last_error


class Rebinding:
    """A resolver whose first answer is ``first`` and every later one ``then``, as a name
    under an attacker's DNS with a zero TTL answers."""

    def __init__(self, first: str, then: str) -> None:
        self.answers = [first, then]
        self.calls: list[str] = []

    def __call__(self, host: str, port: int) -> Sequence[str]:
        self.calls.append(host)
        return [self.answers[min(len(self.calls), 2) - 1]]


@pytest.fixture
def two_receivers(receiver):
    """Receivers on 127.0.0.1 and 127.0.0.2, on the same port: only the address tells them apart."""
    checked = receiver(200)
    port = int(checked.url.split(":")[2].split("/")[0])
    other = receiver(200, host="127.0.0.2", port=port)  # all of 127/8 is loopback on Linux
    return checked, other, port


def test_the_checked_address_is_the_one_connected_to(settings, two_receivers) -> None:
    """The name is resolved once: a resolver answering an allowed address, then a refused one,
    cannot move the connection to the refused one; Host keeps the name."""
    settings.ALERT_WEBHOOK_ALLOWED_NETWORKS = ONLY_127_0_0_1
    checked, other, port = two_receivers
    resolver = Rebinding(first="127.0.0.1", then="127.0.0.2")

    status = post_webhook(f"http://rebind.test:{port}/hook/", "s3cret", b"{}", 1, timestamp=1, resolver=resolver)

    assert status == 200
    assert resolver.calls == ["rebind.test"]
    assert [r.headers["Host"] for r in checked.requests] == [f"rebind.test:{port}"]
    assert other.requests == []


def test_a_refused_first_answer_sends_nothing(settings, two_receivers) -> None:
    """A name whose answer is refused gets no connection at all, to either address."""
    settings.ALERT_WEBHOOK_ALLOWED_NETWORKS = ONLY_127_0_0_1
    checked, other, port = two_receivers

    with pytest.raises(DeliveryError) as info:
        post_webhook(f"http://rebind.test:{port}/hook/", "s3cret", b"{}", 1, timestamp=1,
                     resolver=Rebinding(first="127.0.0.2", then="127.0.0.1"))  # fmt: skip

    assert info.value.retry is False
    assert "rebind.test (127.0.0.2) is a loopback address" in str(info.value)
    assert checked.requests == other.requests == []


def test_one_refused_address_among_several_refuses_the_name(settings, two_receivers) -> None:
    """A name resolving to an allowed and a refused address is refused as a whole."""
    settings.ALERT_WEBHOOK_ALLOWED_NETWORKS = ONLY_127_0_0_1
    checked, other, port = two_receivers

    with pytest.raises(DeliveryError, match=r"127\.0\.0\.2"):
        post_webhook(f"http://both.test:{port}/hook/", "s3cret", b"{}", 1, timestamp=1,
                     resolver=lambda host, port: ["127.0.0.1", "127.0.0.2"])  # fmt: skip
    assert checked.requests == other.requests == []


def test_an_unresolvable_name_is_retried(settings) -> None:
    """A name that does not resolve (now) is a failure for later, not a refusal."""

    def nxdomain(host: str, port: int) -> Sequence[str]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    with pytest.raises(DeliveryError, match=r"could not resolve gone\.test") as info:
        post_webhook("https://gone.test/hook", "s3cret", b"{}", 1, timestamp=1, resolver=nxdomain)
    assert info.value.retry is True


def test_the_next_checked_address_is_tried_when_one_does_not_answer(settings, receiver) -> None:
    """Of two checked addresses, a refused connection to the first moves on to the second."""
    settings.ALERT_WEBHOOK_ALLOWED_NETWORKS = (ipaddress.ip_network("127.0.0.0/8"),)
    hook = receiver(200)  # on 127.0.0.1 only: 127.0.0.3 refuses the connection
    port = int(hook.url.split(":")[2].split("/")[0])

    status = post_webhook(f"http://two.test:{port}/hook/", "s3cret", b"{}", 1, timestamp=1,
                          resolver=lambda host, p: ["127.0.0.3", "127.0.0.1"])  # fmt: skip
    assert status == 200
    assert len(hook.requests) == 1


def test_any_address_sends_without_a_check(site, receiver, worker, settings) -> None:
    """``*`` (None): the operator takes the filtering elsewhere; loopback is reached."""
    settings.ALERT_WEBHOOK_ALLOWED_NETWORKS = None
    hook = receiver(200)
    episode_changed(make_episode(webhook_channel(site, hook.url)), "opened")
    assert worker.wait_final() == ["SUCCESS"]
    assert len(hook.requests) == 1


def test_a_channel_with_a_refused_literal_address_is_refused_up_front(site) -> None:
    """The model's check, which the API, the admin and the dashboard run, names the address."""
    channel = Channel(site=site, name="meta", kind=WEBHOOK, url="http://169.254.169.254/latest/meta-data/")
    with pytest.raises(ValidationError) as info:
        channel.full_clean()
    [message] = info.value.message_dict["url"]
    assert "169.254.169.254 is a link-local address" in message
    assert SETTING in message


def test_an_allowed_literal_address_is_accepted(site, allow_loopback) -> None:
    """A literal address in an allowed network is a valid channel host."""
    Channel(site=site, name="local", kind=WEBHOOK, url="http://127.0.0.1:9000/hook").full_clean()


def test_the_api_refuses_a_channel_to_a_private_address(client: Client, manager: SiteKey) -> None:
    """POST alerts/channels with a private literal address: 400 naming the url, nothing stored."""
    response = send(client, manager, "POST", "alerts/channels",
                    {"name": "Intranet", "kind": "webhook", "url": "http://10.0.0.5/hook"})  # fmt: skip
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["parameter"] == "url"
    assert "10.0.0.5 is a private address" in error["message"]
    assert not Channel.objects.exists()


def _certificate(name: str, directory: Path) -> tuple[Path, Path, Path]:
    """A test CA, and a server certificate for ``name`` it signed: (ca.pem, cert.pem, key.pem)."""
    now = dt.datetime.now(dt.UTC)

    def build(subject: str, issuer: x509.Name | None, key, signer, *, ca: bool) -> x509.Certificate:
        subject_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject_name)
            .issuer_name(issuer or subject_name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(hours=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if not ca:
            builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(subject)]), critical=False)
        return builder.sign(signer, hashes.SHA256())

    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = build("Footfall test CA", None, ca_key, ca_key, ca=True)
    cert = build(name, ca.subject, key, ca_key, ca=False)
    paths = directory / "ca.pem", directory / "cert.pem", directory / "key.pem"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return paths


@pytest.fixture
def tls_receiver(tmp_path, monkeypatch, receiver):
    """An HTTPS receiver on 127.0.0.1 whose certificate names ``hooks.test``, signed by a CA
    the worker trusts (``SSL_CERT_FILE``); records the SNI names it is sent."""
    ca, cert, key = _certificate("hooks.test", tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))
    server_names: list[str | None] = []
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.sni_callback = lambda sock, name, ctx: server_names.append(name)
    return receiver(200, tls=context), server_names


def test_https_to_the_checked_address_verifies_the_name(settings, tls_receiver) -> None:
    """Connected to the checked IP address, TLS still sends the name (SNI) and verifies the
    certificate against it; Host names it too."""
    settings.ALERT_WEBHOOK_ALLOWED_NETWORKS = ONLY_127_0_0_1
    hook, server_names = tls_receiver
    port = hook.server.server_address[1]

    status = post_webhook(f"https://hooks.test:{port}/hook/", "s3cret", b"{}", 1, timestamp=1,
                          resolver=lambda host, p: ["127.0.0.1"])  # fmt: skip

    assert status == 200
    assert server_names == ["hooks.test"]
    assert [r.headers["Host"] for r in hook.requests] == [f"hooks.test:{port}"]


def test_https_to_a_name_the_certificate_does_not_cover_fails(settings, tls_receiver) -> None:
    """The same address under another name fails the certificate check: pinning to the IP
    address does not turn verification off."""
    settings.ALERT_WEBHOOK_ALLOWED_NETWORKS = ONLY_127_0_0_1
    hook, _ = tls_receiver
    port = hook.server.server_address[1]

    with pytest.raises(DeliveryError, match="CERTIFICATE_VERIFY_FAILED"):
        post_webhook(f"https://other.test:{port}/hook/", "s3cret", b"{}", 1, timestamp=1,
                     resolver=lambda host, p: ["127.0.0.1"])  # fmt: skip
    assert hook.requests == []
