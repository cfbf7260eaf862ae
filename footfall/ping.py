"""Whether a store answers, for health checks: one client per pinger, made on first use.

Each store's module says how to make its client and ping it (:func:`historical.store.mongo_ping`,
:func:`realtime.store.redis_ping`), so the health checks name no store client themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, Protocol, TypeVar


class Closable(Protocol):
    def close(self) -> None: ...


Client = TypeVar("Client", bound=Closable)


class Ping(Generic[Client]):
    """Pings one store with a client kept for the pinger's life, made on first use (so a
    process that forks before its first ping inherits none)."""

    def __init__(
        self, connect: Callable[[], Client], ping: Callable[[Client], object], errors: tuple[type[Exception], ...]
    ) -> None:
        self._connect = connect
        self._ping = ping
        self._errors = errors  # what the client raises when the store is away or refuses
        self._client: Client | None = None

    def problem(self) -> str | None:
        """None when the store answered, else a one-line reason."""
        if self._client is None:
            self._client = self._connect()
        try:
            self._ping(self._client)
        except self._errors as exc:
            return f"unreachable: {exc}"
        return None

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
