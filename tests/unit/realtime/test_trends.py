"""The trend detector ranks values rising against their own baseline, not raw volume."""

from __future__ import annotations

from realtime.trends import rank_rising


def test_a_spike_outranks_a_big_steady_value() -> None:
    baseline = {"/home": [100, 95, 105, 98, 102, 100], "/blog/post": [2, 1, 3, 2, 2, 1]}
    recent = {"/home": 104, "/blog/post": 40}
    ranked = rank_rising(recent, baseline, blocks=6)
    assert [r.value for r in ranked] == ["/blog/post"], "/home's +4 is within its ordinary noise"
    assert ranked[0].z > 10


def test_new_values_need_some_volume() -> None:
    """A brand-new value with a couple of hits is noise; one with many is news."""
    ranked = rank_rising({"a": 2, "b": 30}, {"/": [40] * 18}, blocks=18)
    assert [r.value for r in ranked] == ["b"]


def test_falling_or_flat_values_are_not_rising() -> None:
    baseline = {"x": [50] * 6, "y": [10] * 6}
    assert rank_rising({"x": 20, "y": 10}, baseline, blocks=6) == []


def test_short_history_is_padded_with_zero_blocks() -> None:
    ranked = rank_rising({"x": 12}, {"x": [12], "y": [3] * 6}, blocks=6)
    assert ranked[0].baseline_mean == 2.0


def test_without_a_past_nothing_is_rising() -> None:
    """A site that just started (or whose counters were lost) has no baseline: no surge to report."""
    assert rank_rising({"/": 300, "/pricing": 90}, {}, blocks=18) == []
    two_blocks = {"/": [0] * 16 + [250, 260]}
    assert rank_rising({"/": 300, "/pricing": 90}, two_blocks, blocks=18) == []


def test_blocks_when_the_whole_site_was_silent_are_not_a_quiet_past() -> None:
    """Tracking began 40 minutes ago: the baseline is those 4 blocks, not 18 with 14 zeros."""
    baseline = {"/": [0] * 14 + [100, 104, 96, 100], "/pricing": [0] * 14 + [20, 22, 18, 20]}
    ranked = rank_rising({"/": 103, "/pricing": 21, "/launch": 60}, baseline, blocks=18)
    assert [r.value for r in ranked] == ["/launch"]
    assert ranked[0].baseline_mean == 0.0
