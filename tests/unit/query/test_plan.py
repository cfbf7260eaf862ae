"""The range planner: settled days from the batch layer, the rest from Redis, no gaps, no overlaps."""

from __future__ import annotations

import datetime as dt
import itertools
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from query.plan import Days, buckets, classify_bucket, local_midnight, ms, realtime_window_start, split

NY = ZoneInfo("America/New_York")
UTC = dt.UTC


def at(day: str, hour: int = 0, tz: ZoneInfo = NY) -> dt.datetime:
    return dt.datetime.combine(dt.date.fromisoformat(day), dt.time(hour), tz)


def test_settled_whole_days_come_from_batch_the_rest_from_realtime() -> None:
    settled = Days({"2026-11-02", "2026-11-03"})
    pieces = split(at("2026-11-01", 6), at("2026-11-04", 12), NY, settled, at("2026-10-01"), True)
    assert [(p.source, p.day, p.start, p.end) for p in pieces] == [
        ("realtime", None, at("2026-11-01", 6), at("2026-11-02")),
        ("batch", "2026-11-02", at("2026-11-02"), at("2026-11-03")),
        ("batch", "2026-11-03", at("2026-11-03"), at("2026-11-04")),
        ("realtime", None, at("2026-11-04"), at("2026-11-04", 12)),
    ]


def test_a_settled_day_cut_by_the_range_is_not_served_from_batch() -> None:
    pieces = split(at("2026-11-02", 12), at("2026-11-03"), NY, Days({"2026-11-02"}), at("2026-10-01"))
    assert [p.source for p in pieces] == ["realtime"]


def test_older_than_the_window_and_unsettled_is_missing() -> None:
    window = at("2026-11-03", 5)
    pieces = split(at("2026-11-01"), at("2026-11-04"), NY, Days({"2026-11-01"}), window, merge=True)
    assert [(p.source, p.start, p.end) for p in pieces] == [
        ("batch", at("2026-11-01"), at("2026-11-02")),
        ("missing", at("2026-11-02"), window),
        ("realtime", window, at("2026-11-04")),
    ]
    # Unmerged, no piece crosses a site-local midnight (visitors are counted per day).
    pieces = split(at("2026-11-01"), at("2026-11-04"), NY, Days({"2026-11-01"}), window)
    assert [(p.source, p.start, p.end) for p in pieces] == [
        ("batch", at("2026-11-01"), at("2026-11-02")),
        ("missing", at("2026-11-02"), at("2026-11-03")),
        ("missing", at("2026-11-03"), window),
        ("realtime", window, at("2026-11-04")),
    ]


def test_dst_day_has_25_hours_and_its_midnights_are_local() -> None:
    # 2026-11-01: New York falls back; the local day is 25 hours long.
    day_start, next_day = local_midnight(dt.date(2026, 11, 1), NY), local_midnight(dt.date(2026, 11, 2), NY)
    assert next_day.astimezone(UTC) - day_start.astimezone(UTC) == dt.timedelta(hours=25)
    hours = buckets(at("2026-11-01"), at("2026-11-02"), "hour", NY)
    assert len(hours) == 25
    days = buckets(at("2026-10-30"), at("2026-11-03"), "day", NY)
    assert [b[0].date().isoformat() for b in days] == ["2026-10-30", "2026-10-31", "2026-11-01", "2026-11-02"]


def test_buckets_from_batch_only_when_they_are_exactly_a_settled_day_or_hour() -> None:
    window = at("2026-11-10")
    day = classify_bucket(at("2026-11-02"), at("2026-11-03"), NY, Days({"2026-11-02"}), window)
    assert (day.source, day.day, day.bucket) == ("batch", "2026-11-02", None)
    hour = classify_bucket(at("2026-11-02", 7), at("2026-11-02", 8), NY, Days({"2026-11-02"}), window)
    assert (hour.source, hour.bucket) == ("batch", ms(at("2026-11-02", 7)))
    # A day bucket in another zone is not a site day: it cannot come from the daily rollup.
    tokyo = ZoneInfo("Asia/Tokyo")
    other = classify_bucket(at("2026-11-02", tz=tokyo), at("2026-11-03", tz=tokyo), NY, Days({"2026-11-01"}), window)
    assert other.source == "missing"
    minute_end = at("2026-11-02", 7) + dt.timedelta(minutes=1)
    minute = classify_bucket(at("2026-11-02", 7), minute_end, NY, Days({"2026-11-02"}), at("2026-11-01"))
    assert minute.source == "realtime"


def test_imported_days_answer_whole_days_the_site_did_not_settle_or_all_when_imports_win() -> None:
    window = at("2026-11-10")
    own = Days({"2026-11-02", "2026-11-03"}, {"2026-11-01", "2026-11-02"})
    pieces = split(at("2026-11-01"), at("2026-11-04"), NY, own, window)
    assert [(p.source, p.day) for p in pieces] == [
        ("imported", "2026-11-01"), ("batch", "2026-11-02"), ("batch", "2026-11-03")
    ]  # fmt: skip
    theirs = Days(own.settled, own.imported, imported_wins=True)
    pieces = split(at("2026-11-01"), at("2026-11-04"), NY, theirs, window)
    assert [p.source for p in pieces] == ["imported", "imported", "batch"]
    # Part of an imported day is not that day: an import has no hours.
    part = split(at("2026-11-01", 12), at("2026-11-02"), NY, own, window)
    assert [p.source for p in part] == ["missing"]
    day = classify_bucket(at("2026-11-01"), at("2026-11-02"), NY, own, window)
    assert (day.source, day.day, day.bucket) == ("imported", "2026-11-01", None)
    hour = classify_bucket(at("2026-11-01", 7), at("2026-11-01", 8), NY, own, window)
    assert (hour.source, hour.day, hour.bucket) == ("imported", "2026-11-01", ms(at("2026-11-01", 7)))
    assert classify_bucket(at("2026-11-02", 7), at("2026-11-02", 8), NY, own, window).source == "batch"
    assert classify_bucket(at("2026-11-02", 7), at("2026-11-02", 8), NY, theirs, window).source == "imported"


def test_realtime_window_starts_on_a_whole_minute_inside_retention() -> None:
    now = dt.datetime(2026, 11, 3, 10, 30, 45, tzinfo=UTC)
    start = realtime_window_start(now, 48 * 3600)
    assert start == dt.datetime(2026, 11, 1, 10, 31, tzinfo=UTC)


settled_days = st.sets(st.sampled_from([f"2026-11-{d:02d}" for d in range(1, 11)]))
offsets = st.integers(min_value=0, max_value=10 * 24 * 60)


@given(
    settled_days,
    settled_days,
    st.booleans(),
    offsets,
    offsets,
    offsets,
    st.sampled_from(["America/New_York", "Asia/Kolkata", "UTC"]),
)
def test_pieces_cover_the_range_exactly_once(
    settled: set[str], imported: set[str], imported_wins: bool, a: int, b: int, w: int, tz_name: str
) -> None:
    tz = ZoneInfo(tz_name)
    base = dt.datetime(2026, 11, 1, tzinfo=tz).astimezone(UTC)  # absolute minutes across the DST change
    start, end = sorted((base + dt.timedelta(minutes=a), base + dt.timedelta(minutes=b)))
    window = base + dt.timedelta(minutes=w)
    pieces = split(start, end, tz, Days(settled, imported, imported_wins), window, merge=bool(a % 2))
    if start == end:
        assert pieces == []
        return
    assert pieces[0].start == start
    assert pieces[-1].end == end
    for left, right in itertools.pairwise(pieces):
        assert left.end == right.start
    for p in pieces:
        assert p.start < p.end
        if p.source in ("batch", "imported"):
            assert p.day in (settled if p.source == "batch" else imported)
            assert p.start == local_midnight(dt.date.fromisoformat(p.day), tz).astimezone(UTC)
            # A day both stores hold is the site's own unless it prefers its imports.
            assert (p.source == "imported") == (p.day in imported and (imported_wins or p.day not in settled))
        elif p.source == "missing":
            assert p.end <= window
        else:
            assert p.start >= window


BERLIN = ZoneInfo("Europe/Berlin")


@pytest.mark.parametrize(
    ("zone", "day", "count", "short"),
    [
        ("Europe/Berlin", "2026-10-25", 25, []),
        ("Europe/Berlin", "2026-03-29", 23, []),
        ("Australia/Sydney", "2026-04-05", 25, []),
        ("Australia/Sydney", "2026-10-04", 23, []),
        ("Australia/Lord_Howe", "2026-04-05", 25, ["01:30+10:30"]),
        ("Australia/Lord_Howe", "2026-10-04", 24, ["02:30+11:00"]),
        ("Asia/Kolkata", "2026-10-25", 24, []),
        ("America/Caracas", "2016-05-01", 24, ["02:00-04:30"]),
    ],
)
def test_hour_buckets_of_change_days_are_instants(zone: str, day: str, count: int, short: list[str]) -> None:
    """A local day's hour buckets: 25 or 23 on change days, 30-minute ones at 30-minute changes."""
    tz = ZoneInfo(zone)
    first = local_midnight(dt.date.fromisoformat(day), tz)
    hours = buckets(first, local_midnight(dt.date.fromisoformat(day) + dt.timedelta(days=1), tz), "hour", tz)
    assert len(hours) == count
    assert len({s.astimezone(UTC) for s, _ in hours}) == count
    hour = dt.timedelta(hours=1)
    halves = [
        s.isoformat()[11:16] + s.isoformat()[-6:] for s, e in hours if e.astimezone(UTC) - s.astimezone(UTC) != hour
    ]
    assert halves == short
    for (_, end), (start, _) in itertools.pairwise(hours):
        assert end.astimezone(UTC) == start.astimezone(UTC)


def test_both_repeated_hours_come_from_the_rollup_inside_the_realtime_window() -> None:
    """On a settled fall-back day, with the clock 30 hours after the change (inside the 48 h of
    Redis), each of the 25 hours comes from the batch layer once: none from Redis, none missing."""
    day = dt.date(2026, 10, 25)
    start, end = local_midnight(day, BERLIN), local_midnight(day + dt.timedelta(days=1), BERLIN)
    now = dt.datetime(2026, 10, 26, 7, tzinfo=UTC)
    window = realtime_window_start(now, 48 * 3600)
    assert window < start.astimezone(UTC)
    day = Days({"2026-10-25"})
    pieces = [classify_bucket(s, e, BERLIN, day, window) for s, e in buckets(start, end, "hour", BERLIN)]
    assert [p.source for p in pieces] == ["batch"] * 25
    assert len({p.bucket for p in pieces}) == 25
    repeated = [p.start.isoformat() for p in pieces if p.start.astimezone(BERLIN).hour == 2]
    assert repeated == ["2026-10-25T02:00:00+02:00", "2026-10-25T02:00:00+01:00"]
    # Unsettled, the same hours come from Redis, each once, and still as 25 distinct spans.
    live = [classify_bucket(s, e, BERLIN, Days(set()), window) for s, e in buckets(start, end, "hour", BERLIN)]
    assert [p.source for p in live] == ["realtime"] * 25
