"""Reading what the speed layer stored never fails on a value it cannot parse: the
overflow value is a row like any other, and anything unreadable is skipped and counted
in one log line a minute per kind."""

from __future__ import annotations

import logging

import pytest

from dashboard import tables
from footfall.unreadable import Unreadable
from footfall.vocabulary import REFPAGE_SEPARATOR, VALUE_OTHER
from realtime import reads


def test_the_overflow_pairs_are_one_flow_from_other_to_other() -> None:
    ranked = [(VALUE_OTHER, 1000), (f"google.com{REFPAGE_SEPARATOR}/a", 7), (f"(direct){REFPAGE_SEPARATOR}/", 3)]
    assert reads._flows(ranked) == [(VALUE_OTHER, VALUE_OTHER, 1000), ("google.com", "/a", 7), ("(direct)", "/", 3)]


def test_a_pair_without_its_separator_is_skipped_and_counted(caplog: pytest.LogCaptureFixture) -> None:
    before = reads.skip.__self__.totals().get("refpage value", 0)
    with caplog.at_level(logging.WARNING, logger="footfall.unreadable"):
        flows = reads._flows([("stray", 5), (f"a.com{REFPAGE_SEPARATOR}/x", 2)])
    assert flows == [("a.com", "/x", 2)]
    assert reads.skip.__self__.totals()["refpage value"] == before + 1


def test_unreadable_counts_and_members_read_as_nothing() -> None:
    assert reads._num(b"12") == 12
    assert reads._num(3.0) == 3
    assert reads._num(None) == 0
    assert reads._num(b"twelve") == 0
    assert reads._num(b"nan") == 0
    assert reads._num(b"inf") == 0
    assert reads._decoded(b"\xff\xfe") is None
    assert reads._decoded(b"/caf\xc3\xa9") == "/café"
    assert list(reads._scores(iter([(b"/a", 2.0), (b"\xff", 1.0), ("/b", 1.0)]), "page value")) == [
        ("/a", 2), ("/b", 1)
    ]  # fmt: skip
    assert reads._marker(b"42", "hours_from marker") == 42
    assert reads._marker(b"soon", "hours_from marker") is None


def test_each_kind_is_logged_at_most_once_a_minute_with_what_it_skipped(caplog: pytest.LogCaptureFixture) -> None:
    now = [1000.0]
    unreadable = Unreadable(every_s=60, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="footfall.unreadable"):
        for _ in range(5):
            unreadable.skip("refpage value", "stray")
        unreadable.skip("count", b"x")
        now[0] += 59
        unreadable.skip("refpage value", "later")
        now[0] += 2
        unreadable.skip("refpage value", "after a minute")
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3  # the first of each kind, then one line a minute later
    assert "skipped 1 unreadable stored refpage value(s)" in lines[0]
    assert "skipped 1 unreadable stored count(s)" in lines[1]
    assert "skipped 6 unreadable stored refpage value(s)" in lines[2]  # the 4 + 1 held back, and this one
    assert "'stray'" in lines[2]  # the first one held back
    assert unreadable.totals() == {"refpage value": 7, "count": 1}


def test_the_other_row_is_shown_as_other_values_and_filters_nothing() -> None:
    rows = tables.value_rows([{"value": VALUE_OTHER, "pageviews": 9}, {"value": "/a", "pageviews": 2}])
    assert rows == [
        {"value": "other values", "pageviews": 9, "id": VALUE_OTHER},
        {"value": "/a", "pageviews": 2, "id": "/a"},
    ]
    assert tables.drill("pages", VALUE_OTHER) == (None, "pages")
    assert tables.drill("pages", "/a") == ({"dimension": "pages", "value": "/a"}, "referrers")


def test_a_ranking_cut_to_length_keeps_its_total_under_other() -> None:
    counts = {"/a": 5, "/b": 4, "/c": 3, VALUE_OTHER: 2, "/d": 1}
    assert reads.top_values(counts, 3) == [("/a", 5), ("/b", 4), ("/c", 3)]
    assert reads.top_values(counts, 3, rest_as_other=True) == [(VALUE_OTHER, 6), ("/a", 5), ("/b", 4)]
    assert reads.top_values({**counts, VALUE_OTHER: 9}, 2, rest_as_other=True) == [(VALUE_OTHER, 17), ("/a", 5)]
    assert reads.top_values(counts, 5, rest_as_other=True) == sorted(counts.items(), key=lambda kv: -kv[1])
    assert sum(n for _, n in reads.top_values(counts, 1, rest_as_other=True)) == sum(counts.values())
