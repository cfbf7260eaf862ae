"""Journeys' pure parts: the kept length of a session, the stored chunks read back, the walk along a
path (forwards with (exit) and (more), backwards with (entrance), visitors once per day) against the
plain-Python truth, the parameters, and the answer's plan (only whole settled days count)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from zoneinfo import ZoneInfo

import pytest

from footfall.journeys import kept_length
from footfall.vocabulary import QueryError
from historical import journeys as stored
from historical.journeys import JourneyDays, JourneyRow, journey_documents, journey_rows
from historical.reads import Settlement
from query.journeys import JourneyQuery, Journeys, parse, walk
from query.params import Range
from query.service import QueryService, QuerySite
from tests.journey_truth import Hit, journey, sessions

DAY1, DAY2 = "2026-11-02", "2026-11-03"
UTC = ZoneInfo("UTC")


def at(day: str, minute: int) -> int:
    return int(dt.datetime.combine(dt.date.fromisoformat(day), dt.time(), UTC).timestamp() * 1000) + minute * 60_000


def hits() -> list[Hit]:
    """Sessions over two days: reloads, events, a 30-minute split, a session over midnight."""
    out: list[Hit] = []

    def visit(visitor: str, day: str, *steps: tuple[int, str]) -> None:
        for minute, what in steps:
            kind, path = ("pageview", what) if what.startswith("/") else (what, None)
            out.append(Hit(visitor, at(day, minute), f"{visitor}-{day}-{minute}", kind, path))

    visit("a", DAY1, (600, "/"), (601, "/"), (602, "/pricing"), (603, "signup"), (604, "/welcome"))
    visit("a", DAY1, (700, "/"), (701, "/pricing"), (702, "signup"))  # the same visitor again: counted once
    visit("b", DAY1, (600, "/blog"), (601, "/"), (602, "/pricing"), (640, "/pricing"), (641, "/"))  # split at 38 min
    visit("c", DAY1, (1430, "/"), (1445, "/pricing"), (1455, "/docs"))  # 23:50 to 00:15: DAY1's
    visit("c", DAY2, (600, "signup"), (601, "/"), (602, "/pricing"), (603, "/pricing"), (604, "signup"))
    visit("d", DAY2, (600, "/"), (601, "/docs"))
    return out


def stored_days(found: dict[str, list[tuple[str, list[str]]]]) -> dict[str, tuple[JourneyRow, ...]]:
    """What the rollup stores of the truth's sessions, through the documents and back."""
    out = {}
    for day, runs in found.items():
        numbers = {v: n for n, v in enumerate(sorted({v for v, _ in runs}), start=1)}
        rows = [{"visitor": numbers[v], "sessions": 1, "truncated": kept_length(s) < len(s),
                 "steps": s[: kept_length(s)]} for v, s in runs]  # fmt: skip
        out.update(journey_rows({"day": day, **doc} for doc in journey_documents(rows)))
    return out


def columns(q: JourneyQuery, days: Iterable[str]) -> dict[str, object]:
    found = walk({d: rows for d, rows in stored_days(sessions(hits(), "UTC")).items() if d in days}, q)
    return {"visitors": found.visitors, "columns": [{k: t.visitors for k, t in c.items()} for c in found.columns]}


@pytest.mark.parametrize(
    "q",
    [
        JourneyQuery("/", ("/pricing", "signup")),
        JourneyQuery("signup", ()),
        JourneyQuery("/pricing", ("signup",), "next"),
        JourneyQuery("/pricing", ("/", "/blog"), "previous"),
        JourneyQuery("signup", ("/pricing", "/"), "previous"),
        JourneyQuery("/nowhere", ("/",)),
    ],
)
@pytest.mark.parametrize("days", [(DAY1,), (DAY2,), (DAY1, DAY2)])
def test_walk_equals_the_truth(q: JourneyQuery, days: tuple[str, ...]) -> None:
    """Every column's visitors, per day and summed over both, equal the plain-Python truth."""
    assert columns(q, days) == journey(hits(), "UTC", days, q.start, q.path, q.direction)


def test_ends_and_visitors_once_per_day() -> None:
    """(exit), (entrance), a visitor once per day across sessions, and the days summed."""
    both = columns(JourneyQuery("/", ("/pricing", "signup")), (DAY1, DAY2))
    assert both == {
        "visitors": 5,  # a, b, c on DAY1 (a's two sessions count once), c and d again on DAY2
        "columns": [
            {"/pricing": 4, "(exit)": 1, "/docs": 1},  # b's second session ends at /
            {"signup": 2, "(exit)": 1, "/docs": 1},  # c's session over midnight went on to /docs
            {"/welcome": 1, "(exit)": 2},  # a once each way, c on DAY2
        ],
    }
    back = columns(JourneyQuery("/pricing", ("/",), "previous"), (DAY1,))
    assert back["columns"] == [{"/": 3, "(entrance)": 1}, {"(entrance)": 2, "/blog": 1}]


def test_a_cut_session_goes_on_as_more() -> None:
    """Past what was kept, a cut session shows (more), never (exit); an uncut one exits."""
    steps = ["/a", "/b"] * 30
    keep = kept_length(steps)
    assert keep == 22
    rows = (JourneyRow(1, 1, True, tuple(steps[:keep])), JourneyRow(2, 1, False, ("/a",)))
    path = tuple(steps[1:20])
    found = walk({DAY1: rows}, JourneyQuery("/a", path))
    assert len(found.columns) == 20
    assert {k: t.visitors for k, t in found.columns[-1].items()} == {"/a": 1}
    long = [f"/{n}" for n in range(120)]  # no step repeats: cut at the cap
    assert kept_length(long) == 100
    cut = (JourneyRow(1, 1, True, tuple(long[:100])),)
    found = walk({DAY1: cut}, JourneyQuery("/95", ("/96", "/97", "/98", "/99")))
    assert {k: t.visitors for k, t in found.columns[-1].items()} == {"(more)": 1}
    assert {k: t.visitors for k, t in walk({DAY1: rows}, JourneyQuery("/a")).columns[0].items()} == {
        "/b": 1, "(exit)": 1,
    }  # fmt: skip


def test_kept_length() -> None:
    """Up to 20 steps past the last new one, at most 100, never more than there are."""
    assert kept_length([]) == 0
    assert kept_length(["/a"]) == 1
    assert kept_length(["/a", "/b"] * 50) == 22
    assert kept_length([f"/{n}" for n in range(150)]) == 100
    assert kept_length([f"/{n}" for n in range(90)] + ["/0"] * 3) == 93


def test_documents_chunk_and_read_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """Small chunks still read back whole and in order; a missing chunk is an error, not a part."""
    monkeypatch.setattr(stored, "CHUNK_BYTES", 100)  # a row each
    rows = [{"visitor": n, "sessions": n, "truncated": n % 2 == 0, "steps": [f"/{n}", "signup", "/"]}
            for n in (3, 1, 2)]  # fmt: skip
    docs = journey_documents(rows)
    assert [(d["chunk"], d["chunks"]) for d in docs] == [(0, 3), (1, 3), (2, 3)]
    got = journey_rows({"day": DAY1, **d} for d in reversed(docs))
    assert got == {DAY1: tuple(JourneyRow(n, n, n % 2 == 0, (f"/{n}", "signup", "/")) for n in (1, 2, 3))}
    assert journey_documents([]) == [{"chunk": 0, "labels": [], "rows": [], "chunks": 1}]
    with pytest.raises(ValueError, match="chunks"):
        journey_rows({"day": DAY1, **d} for d in docs[1:])


@pytest.mark.parametrize(
    ("start", "path", "direction", "parameter"),
    [
        ("", None, None, "start"),
        ("pricing", None, None, None),  # an event name
        ("(exit)", None, None, "start"),
        ("/", "/a,(exit)", None, "path"),
        ("/", ",".join(["/a"] * 20), None, "path"),
        ("/", "/a,bad name", None, "path"),
        ("/", "/a", "sideways", "direction"),
    ],
)
def test_parse(start: str, path: str | None, direction: str | None, parameter: str | None) -> None:
    if parameter is None:
        assert parse(start, path, direction) == JourneyQuery(start)
        return
    with pytest.raises(QueryError) as err:
        parse(start, path, direction)
    assert err.value.parameter == parameter


class Rollups:
    """Settled DAY1 (with journeys) and DAY2 (rolled up before them)."""

    def settlement(self, site: str, since: str) -> Settlement:
        return Settlement(frozenset({DAY1, DAY2}), DAY2)

    def journeys(self, site: str, days: Iterable[str]) -> JourneyDays:
        return JourneyDays({d: r for d, r in stored_days(sessions(hits(), "UTC")).items() if d in set(days) - {DAY2}})


def test_answer_counts_whole_settled_days_and_says_what_is_missing() -> None:
    """A range from DAY1 midday to after DAY2: only DAY2 is whole; it was rolled up before journeys."""
    now = dt.datetime(2026, 11, 20, tzinfo=dt.UTC)
    svc = QueryService(Rollups(), None, 3600, now=lambda: now)  # type: ignore[arg-type]
    site = QuerySite("shop", "UTC")
    whole = Range(dt.datetime(2026, 11, 2, tzinfo=UTC), dt.datetime(2026, 11, 4, tzinfo=UTC), UTC)
    body = Journeys(svc).journeys(site, whole, JourneyQuery("/", ("/pricing",)), limit=1)
    truth = journey(hits(), "UTC", [DAY1], "/", ("/pricing",))
    assert body["visitors"] == truth["visitors"]
    first, second = body["steps"]
    assert (first["selected"], first["visitors"]) == ("/pricing", truth["columns"][0]["/pricing"])
    assert first["share"] == round(first["visitors"] / body["visitors"], 6)
    assert len(second["options"]) == 1
    assert second["total"] == len(truth["columns"][1])
    assert any("rolled up before journeys" in note for note in body["sources"]["notes"])
    part = Range(dt.datetime(2026, 11, 2, 12, tzinfo=UTC), dt.datetime(2026, 11, 3, tzinfo=UTC), UTC)
    body = Journeys(svc).journeys(site, part, JourneyQuery("/"))
    assert body["visitors"] == 0
    assert body["sources"]["missing"]["buckets"] == 1
    assert any("nightly rollup only" in note for note in body["sources"]["notes"])
