"""The cache of settled reads: keyed on each day's load generation, bounded by items."""

from __future__ import annotations

import threading

import pytest

from query.settled_cache import SettledCache


class Reads:
    """A fetch function that counts its calls and returns a fresh list of ``size`` items."""

    def __init__(self, size: int = 3) -> None:
        self.calls = 0
        self.size = size

    def __call__(self) -> list[int]:
        self.calls += 1
        return list(range(self.size))


def test_the_same_read_of_the_same_generations_is_served_from_the_cache() -> None:
    cache, fetch = SettledCache(100), Reads()
    gens = {"2026-11-01": "a", "2026-11-02": "b"}
    first = cache.read(("daily", "s"), {"2026-11-01", "2026-11-02"}, gens, fetch)
    again = cache.read(("daily", "s"), ["2026-11-02", "2026-11-01"], gens, fetch)
    assert again is first
    assert fetch.calls == 1
    assert (cache.stats.hits, cache.stats.misses) == (1, 1)


def test_a_reloaded_day_is_read_again() -> None:
    cache, fetch = SettledCache(100), Reads()
    days = {"2026-11-01", "2026-11-02"}
    cache.read(("daily", "s"), days, {"2026-11-01": "a", "2026-11-02": "b"}, fetch)
    cache.read(("daily", "s"), days, {"2026-11-01": "a", "2026-11-02": "c"}, fetch)
    assert fetch.calls == 2


def test_other_days_sites_or_parameters_are_other_entries() -> None:
    cache, fetch = SettledCache(100), Reads()
    gens = {"2026-11-01": "a", "2026-11-02": "b"}
    cache.read(("daily", "s"), {"2026-11-01"}, gens, fetch)
    cache.read(("daily", "s"), {"2026-11-01", "2026-11-02"}, gens, fetch)
    cache.read(("daily", "t"), {"2026-11-01"}, gens, fetch)
    cache.read(("hourly", "s"), {"2026-11-01"}, gens, fetch)
    assert fetch.calls == 4
    assert len(cache) == 4


def test_days_without_a_generation_are_never_cached() -> None:
    cache, fetch = SettledCache(100), Reads()
    for _ in range(2):
        cache.read(("daily", "s"), {"2026-11-01", "2026-11-02"}, {"2026-11-01": "a"}, fetch)
    assert fetch.calls == 2
    assert len(cache) == 0
    assert cache.stats.uncacheable == 2


def test_the_least_recently_used_results_go_once_the_items_exceed_the_bound() -> None:
    cache = SettledCache(10)  # each result of 3 items counts 4
    gens = {f"2026-11-0{i}": "g" for i in range(1, 4)}
    fetches = {day: Reads() for day in gens}
    for day in ("2026-11-01", "2026-11-02"):
        cache.read(("daily", "s"), {day}, gens, fetches[day])
    cache.read(("daily", "s"), {"2026-11-01"}, gens, fetches["2026-11-01"])  # now the newest
    cache.read(("daily", "s"), {"2026-11-03"}, gens, fetches["2026-11-03"])  # evicts 02
    assert cache.items <= 10
    cache.read(("daily", "s"), {"2026-11-01"}, gens, fetches["2026-11-01"])
    cache.read(("daily", "s"), {"2026-11-02"}, gens, fetches["2026-11-02"])
    assert fetches["2026-11-01"].calls == 1
    assert fetches["2026-11-02"].calls == 2


def test_a_result_larger_than_the_cache_is_served_and_not_kept() -> None:
    cache, fetch = SettledCache(5), Reads(size=50)
    assert cache.read(("breakdown", "s"), {"2026-11-01"}, {"2026-11-01": "a"}, fetch) == list(range(50))
    assert len(cache) == 0
    assert cache.items == 0


def test_a_zero_bound_is_refused() -> None:
    with pytest.raises(ValueError, match="max_items"):
        SettledCache(0)


def test_threads_share_it_and_every_reader_gets_the_result() -> None:
    cache, fetch = SettledCache(1000), Reads()
    gens = {"2026-11-01": "a"}
    got: list[list[int]] = []

    def reader() -> None:
        for _ in range(200):
            got.append(cache.read(("daily", "s"), {"2026-11-01"}, gens, fetch))

    threads = [threading.Thread(target=reader) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(got) == 1600
    assert all(result == [0, 1, 2] for result in got)
    assert cache.stats.hits + cache.stats.misses == 1600
    assert fetch.calls == cache.stats.misses
    assert len(cache) == 1
