"""The realtime worker's dedup memory (pure): the last ``size`` distinct keys, first in first out."""

from __future__ import annotations

from realtime.consumer import RecentlyCounted


def test_holds_the_last_size_distinct_keys() -> None:
    recent = RecentlyCounted(size=3)
    recent.update(["a", "b"])
    recent.update(["b", "c", "a"])  # repeats do not take another place
    assert len(recent) == 3
    assert all(k in recent for k in "abc")
    recent.update(["d"])
    assert "a" not in recent
    assert all(k in recent for k in "bcd")


def test_size_stays_at_its_bound_however_many_keys_pass() -> None:
    recent = RecentlyCounted(size=1000)
    for batch in range(50):
        recent.update(f"k{batch}:{i}" for i in range(500))
        assert len(recent) == min((batch + 1) * 500, 1000)
    assert "k49:499" in recent
    assert "k48:0" in recent
    assert "k47:499" not in recent


def test_a_size_below_one_still_remembers_the_latest_key() -> None:
    recent = RecentlyCounted(size=0)
    recent.update(["a", "b"])
    assert "b" in recent
    assert "a" not in recent
