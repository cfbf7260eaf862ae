"""Key names of the realtime store (pure): buckets read back from names, hours split from minutes."""

from __future__ import annotations

import pytest

from realtime.keys import KeyLayout, bucket_of
from realtime.reads import _split_hours

LAYOUT = KeyLayout()


def test_bucket_of_reads_back_every_bucket_key() -> None:
    site, minute = "shop-1_a", 29_395_000
    for key in (
        LAYOUT.counters(site, minute),
        LAYOUT.visitors(site, minute),
        LAYOUT.top(site, minute, "page"),
        LAYOUT.dim_visitors(site, minute, "refurl", "https://x.example/a:b"),
    ):
        assert bucket_of(key) == ("minute", minute)
    hour = minute // 60
    for key in (
        LAYOUT.hour_counters(site, hour),
        LAYOUT.hour_visitors(site, hour),
        LAYOUT.hour_dim_visitors(site, hour, "page", "/a:b"),
        LAYOUT.hour_merged(site, hour),  # so that a rebuild clears it with the hour
    ):
        assert bucket_of(key) == ("hour", hour)


def test_dim_visitors_parts_name_a_values_minutes() -> None:
    """The merge script names minute sketches from these parts: the same names as dim_visitors."""
    head, tail = LAYOUT.dim_visitors_parts("shop", "refpage")
    value = "google.com\x1f/a:b"
    assert head + str(29_395_000) + tail + value == LAYOUT.dim_visitors("shop", 29_395_000, "refpage", value)
    assert LAYOUT.hour_dim_visitors("shop", 7, "page", "") + "/x" == LAYOUT.hour_dim_visitors("shop", 7, "page", "/x")


@pytest.mark.parametrize(
    "key",
    ["ff:rt:shop:active", "ff:rt:seen:shop:0190-ab", "ff:rt:stats", "ff:rt:offsets:realtime", "ff:rt:hours_from",
     "other:rt:shop:123:c", "ff:rt:shop:hx1:c", "ff:rt:shop:12a:c"],
)  # fmt: skip
def test_bucket_of_leaves_other_keys_alone(key: str) -> None:
    assert bucket_of(key) is None


def test_split_hours_keeps_whole_hours_from_the_marker_on() -> None:
    minutes = range(10 * 60 + 17, 14 * 60 + 5)  # 10:17 to 14:05
    assert _split_hours(minutes, 0) == (range(11, 14), [*range(617, 660), *range(840, 845)])
    assert _split_hours(minutes, 12) == (range(12, 14), [*range(617, 720), *range(840, 845)])
    assert _split_hours(minutes, 14) == (range(0), list(minutes))
    assert _split_hours(minutes, None) == (range(0), list(minutes))
    assert _split_hours(range(600, 660), 0) == (range(10, 11), [])
    assert _split_hours(range(601, 659), 0) == (range(0), list(range(601, 659)))
