"""How the answers of several Redis shards merge (pure: the merge functions only)."""

from __future__ import annotations

from realtime.fanout import _largest, _number, _numbers, _scores


def test_counts_and_estimates_add_up_and_absent_stays_absent() -> None:
    assert _number([b"3", None, b"4"]) == 7
    assert _number([None, None]) is None
    assert _number([2.5, b"1"]) == 3.5
    assert _numbers([[b"1", None, b"2"], [b"4", None, None]]) == [5, None, 2]


def test_rankings_sum_each_members_scores() -> None:
    merged = dict(_scores([[(b"/a", 3.0), (b"/b", 1.0)], [(b"/a", 2.0), (b"/c", 5.0)]]))
    assert merged == {b"/a": 5.0, b"/b": 1.0, b"/c": 5.0}


def test_a_marker_is_the_largest_of_the_shards() -> None:
    assert _largest([b"10", None, b"12"]) == 12
    assert _largest([None]) is None
