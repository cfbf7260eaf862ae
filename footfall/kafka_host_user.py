"""A Kafka user for a host site's middleware that may write events and do nothing else.

The Kafka transport of ``footfall-capture`` runs inside the host site. Its credential should
let it do its one job: produce to the events topic (``Write``, which implies ``Describe``
and, since KIP-679, the idempotent producer's ``IdempotentWrite``). It is refused every
other topic, every consumer group and every cluster operation, once the brokers run an
authorizer (KRaft's ``StandardAuthorizer``) and the server's own user is a super user
(docs/security.md). Kafka cannot check which site an event names, so such a user may still
send events for any site: sites of other teams use the HTTP transport and a site ingest key.
"""

from __future__ import annotations

from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

TIMEOUT_S = 30.0
SCRAM_ITERATIONS = 8192  # Kafka's default for SCRAM-SHA-512 credentials made by kafka-configs.sh


class HostUserError(RuntimeError):
    """The brokers refused to create or remove the user or its ACLs (the message says why)."""


def host_acl(user: str, events_topic: str) -> AclBinding:
    """The one ACL of a host user: write to the events topic, from any host."""
    return AclBinding(ResourceType.TOPIC, events_topic, ResourcePatternType.LITERAL, f"User:{user}", "*",
                      AclOperation.WRITE, AclPermissionType.ALLOW)  # fmt: skip


def create_host_user(admin: AdminClient, user: str, password: str, events_topic: str) -> None:
    """Create (or re-password) the SCRAM-SHA-512 user ``user`` and allow it to write ``events_topic``."""
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, SCRAM_ITERATIONS)
    _wait(admin.alter_user_scram_credentials([UserScramCredentialUpsertion(user, info, password.encode())]))
    _wait(admin.create_acls([host_acl(user, events_topic)]))


def remove_host_user(admin: AdminClient, user: str) -> int:
    """Delete every ACL naming ``user`` and its SCRAM credential; return how many ACLs went."""
    everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, f"User:{user}", None,
                                  AclOperation.ANY, AclPermissionType.ANY)  # fmt: skip
    deleted = _wait(admin.delete_acls([everything]))
    removal = UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_512)
    try:
        _wait(admin.alter_user_scram_credentials([removal]))
    except HostUserError as exc:
        if "RESOURCE_NOT_FOUND" not in str(exc):  # no credential left is what was asked
            raise
    return sum(len(bindings) for bindings in deleted)


def _wait(futures: dict) -> list:
    try:
        return [future.result(timeout=TIMEOUT_S) for future in futures.values()]
    except KafkaException as exc:
        raise HostUserError(str(exc.args[0].str() if exc.args else exc)) from exc
