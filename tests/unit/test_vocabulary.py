"""The shared vocabulary: referrer labels, and both layers naming the same dimensions."""

from __future__ import annotations

import pytest

from footfall.vocabulary import API_DIMENSIONS, DIMENSIONS, EVENT_DIMENSIONS, FILTER_DIMENSIONS, ref_label, refpage


@pytest.mark.parametrize(
    ("ref_domain", "referrer", "label"),
    [
        ("google.com", "https://www.google.com/", "google.com"),
        ("com.example.chat", "android-app://com.example.chat/", "com.example.chat"),
        (None, "about:blank", "(unknown)"),
        (None, None, "(direct)"),
        (None, "", "(direct)"),
    ],
)
def test_ref_label(ref_domain: str | None, referrer: str | None, label: str) -> None:
    """(direct) only without a referrer; a referrer naming no host or app is (unknown)."""
    assert ref_label(ref_domain, referrer) == label


def test_refpage_joins_label_and_path() -> None:
    assert refpage("google.com", "/pricing") == "google.com\x1f/pricing"
    assert refpage("(direct)", None) is None


def test_api_names_every_store_dimension_but_refpage() -> None:
    """refpage is served by the flows endpoint, every other dimension by a breakdown."""
    assert set(API_DIMENSIONS.values()) == set(DIMENSIONS) - {"refpage"}
    assert all(API_DIMENSIONS[name] in EVENT_DIMENSIONS for name in FILTER_DIMENSIONS)
    assert "entry_pages" not in FILTER_DIMENSIONS
