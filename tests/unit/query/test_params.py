"""Parameter validation: a fixed vocabulary, bounded numbers, errors that name the parameter."""

from __future__ import annotations

import datetime as dt

import pytest

from footfall.vocabulary import METRICS, QueryError
from query import params as p

NOW = dt.datetime(2026, 11, 21, 12, 0, 30, tzinfo=dt.UTC)


def error_of(fn, *args) -> str:
    with pytest.raises(QueryError) as info:
        fn(*args)
    return info.value.parameter


def test_dates_are_midnights_in_the_zone_and_ranges_snap_to_minutes() -> None:
    rng = p.parse_range({"from": "2026-11-01", "to": "2026-11-02T10:00:30Z"}, "Europe/Berlin", NOW,
                        dt.timedelta(days=1), dt.timedelta(days=30))  # fmt: skip
    assert rng.start == dt.datetime(2026, 11, 1, tzinfo=rng.tz)
    assert rng.start.utcoffset() == dt.timedelta(hours=1)
    assert rng.end == dt.datetime(2026, 11, 2, 10, 1, tzinfo=dt.UTC)


def test_defaults_end_now_and_span_back() -> None:
    rng = p.parse_range({}, "UTC", NOW, dt.timedelta(days=7), dt.timedelta(days=30))
    assert (rng.start, rng.end) == (
        dt.datetime(2026, 11, 14, 12, tzinfo=dt.UTC),
        dt.datetime(2026, 11, 21, 12, 1, tzinfo=dt.UTC),
    )


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ({"from": "yesterday"}, "from"),
        ({"to": "2026-13-01"}, "to"),
        ({"from": "2026-11-02", "to": "2026-11-01"}, "to"),
        ({"from": "2020-01-01", "to": "2026-11-01"}, "from"),
        ({"tz": "Mars/Olympus"}, "tz"),
        ({"tz": "../../etc/passwd"}, "tz"),
        ({"from": "1000-01-01", "to": "1000-01-02"}, "from"),
    ],
)
def test_bad_ranges_name_the_parameter(query: dict[str, str], parameter: str) -> None:
    assert error_of(p.parse_range, query, "UTC", NOW, dt.timedelta(days=1), dt.timedelta(days=366)) == parameter


def test_vocabularies() -> None:
    assert p.choice({"metric": "visitors"}, "metric", METRICS, "pageviews") == "visitors"
    assert error_of(p.choice, {"metric": "$where"}, "metric", METRICS, "pageviews") == "metric"
    assert p.dimension("referrers") == "ref"
    assert error_of(p.dimension, "$gt") == "dimension"
    assert p.parse_metrics("visitors,pageviews,visitors", METRICS, ()) == ("visitors", "pageviews")
    assert error_of(p.parse_metrics, "pageviews,{'$gt': ''}", METRICS, ()) == "metrics"


@pytest.mark.parametrize("raw", ["", "0", "-1", "1001", "1e3", "ten", "99999999999"])
def test_bounded_numbers(raw: str) -> None:
    if raw == "":
        assert p.bounded_int({"limit": raw}, "limit", 10, 1, 1000) == 10
    else:
        assert error_of(p.bounded_int, {"limit": raw}, "limit", 10, 1, 1000) == "limit"


def test_filters_are_one_equality_on_a_known_dimension() -> None:
    assert p.parse_filters("pages==/a==b") == p.Filter("page", "/a==b")
    assert p.parse_filters('referrers=={"$gt": ""}') == p.Filter("ref", '{"$gt": ""}')  # a value, never an operator
    for bad in ("pages=/x", "pages==", "entry_pages==/x", "$where==1", "pages==" + "x" * 3000):
        assert error_of(p.parse_filters, bad) == "filters"
