"""Bearer secrets — API keys and share-link tokens: generated here, shown once, stored hashed.

A token reads ``<kind>_<prefix>_<random>``. ``kind`` says what it is (``ff`` an API key,
``fs`` a share link); ``prefix`` (12 hex digits) is stored in clear to find the row; of the
whole token only a SHA-256 is kept. An unsalted fast hash is right for these, unlike for
passwords: the random part carries 192 bits or more, so there is nothing to guess.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

MAX_LENGTH = 200  # longer presented tokens are refused before any lookup


@dataclass(frozen=True, slots=True)
class Issued:
    prefix: str  # stored in clear, unique: finds the row
    token: str  # given to the user once, never stored
    digest: str  # stored


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def issue(kind: str, random_bytes: int) -> Issued:
    """A new token of ``kind`` with ``random_bytes`` of randomness (at least 24)."""
    if random_bytes < 24:
        raise ValueError("a bearer token needs at least 24 random bytes")
    prefix = secrets.token_hex(6)
    token = f"{kind}_{prefix}_{secrets.token_urlsafe(random_bytes)}"
    return Issued(prefix, token, digest(token))


def prefix_of(token: str, kind: str) -> str | None:
    """The lookup prefix of a presented ``token`` of ``kind``, or None if it cannot be one."""
    parts = token.split("_")
    if len(parts) < 3 or parts[0] != kind or len(token) > MAX_LENGTH:
        return None
    return parts[1]


def matches(stored_digest: str, token: str) -> bool:
    """Whether ``token`` is the one ``stored_digest`` was made from (constant-time compare)."""
    return hmac.compare_digest(stored_digest, digest(token))
