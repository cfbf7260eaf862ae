"""The store breaker: closed until a failure, open for the cool-down, then one trial at a time."""

from __future__ import annotations

import pytest

from footfall.breaker import Breaker, Guarded, StoreUnavailable


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_failure_refuses_calls_until_the_cool_down_then_lets_one_try() -> None:
    clock = Clock()
    breaker = Breaker(5.0, clock)
    assert breaker.allow()
    breaker.failed()
    assert (breaker.open, breaker.allow(), breaker.retry_after_s()) == (True, False, 5.0)
    clock.now += 5.0
    assert breaker.allow()  # the trial
    assert not breaker.allow()  # only one at a time
    breaker.failed()  # the trial failed: open again, a full cool-down
    clock.now += 4.9
    assert not breaker.allow()
    clock.now += 0.1
    assert breaker.allow()
    breaker.succeeded()
    assert (breaker.open, breaker.allow(), breaker.allow(), breaker.retry_after_s()) == (False, True, True, 0.0)


class Store:
    def __init__(self) -> None:
        self.down = False
        self.calls = 0

    def read(self, x: int) -> int:
        self.calls += 1
        if self.down:
            raise ConnectionError("refused")
        if x < 0:
            raise ValueError("bad query")
        return x * 2


def test_a_guarded_store_fails_once_then_at_once_until_it_answers_again() -> None:
    clock = Clock()
    store = Store()
    guarded = Guarded(store, "mongo", Breaker(5.0, clock), (ConnectionError,))
    assert guarded.read(2) == 4
    with pytest.raises(ValueError, match="bad query"):  # an error the store answered with: it is up
        guarded.read(-1)
    store.down = True
    with pytest.raises(ConnectionError):
        guarded.read(1)
    with pytest.raises(StoreUnavailable, match="mongo"):
        guarded.read(1)
    assert store.calls == 3  # the refused read never reached the store
    store.down = False
    clock.now += 5.0
    assert guarded.read(3) == 6
    assert guarded.read(4) == 8
