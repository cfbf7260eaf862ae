"""A Redis user for a host site's middleware that may read the daily salts and nothing else.

The Kafka transport of ``footfall-capture`` reads each day's salt from the server's Redis
(footfall_capture/salts.py). Its user needs ``GET`` and ``EXPIRETIME`` on the salt keys, read
only: it cannot create or overwrite a salt, touch any other key (rate limits, sessions,
counters, Celery's queues), or run any other command. The server makes each day's salt ahead
(the ``make-salts-ahead`` task), and the host's store reads them once Redis refuses it more.
"""

from __future__ import annotations

import hashlib

import redis

from footfall_capture.salts import KEY

# The user's whole rule set after ``reset`` (no password, keys, channels or commands): read-only
# access (%R~) to the salt keys and the two commands the salt store reads them with.
RULES = ("on", f"%R~{KEY.format(day='*')}", "+get", "+expiretime")


class HostUserError(RuntimeError):
    """Redis refused to create or remove the user (the message says why)."""


def create_host_user(client: redis.Redis, user: str, password: str) -> None:
    """Create (or reset) ``user`` with :data:`RULES` and ``password``, sent as its SHA-256 only."""
    digest = hashlib.sha256(password.encode()).hexdigest()
    try:
        client.execute_command("ACL", "SETUSER", user, "reset", f"#{digest}", *RULES)
    except redis.RedisError as exc:
        raise HostUserError(str(exc)) from exc


def remove_host_user(client: redis.Redis, user: str) -> bool:
    """Delete ``user``; whether it existed."""
    try:
        return bool(client.acl_deluser(user))
    except redis.RedisError as exc:
        raise HostUserError(str(exc)) from exc


def persist(client: redis.Redis) -> bool:
    """Write the users to Redis's ACL file with ``ACL SAVE`` when it has one; False when it has none
    (users set at run time then last until Redis restarts)."""
    try:
        configured = client.config_get("aclfile").get("aclfile")
        if not configured:
            return False
        client.acl_save()
    except redis.RedisError as exc:
        raise HostUserError(f"could not save the ACL file: {exc}") from exc
    return True
