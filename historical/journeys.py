"""Journeys' documents in MongoDB (``rollup_journeys``): each site and day's kept session steps
(:mod:`spark_jobs.journeys`), in chunks well under MongoDB's 16 MB document limit, and their shapes
when read back.

A day is one or more documents ``site|day|<chunk>`` (chunk from 0; every day rolled up has chunk 0,
empty on a day without sessions, so "rolled up with journeys" is visible), each self-contained::

    {"chunk": 0, "chunks": 2, "labels": ["/", "/pricing", "signup"],
     "rows": [{"v": 1, "n": 2, "t": false, "s": [0, 1, 2]}, ...]}

A row is one visitor number ``v`` (1, 2, … per site and day; the visitor ids are not stored), the
number ``n`` of that visitor's sessions with these kept steps, whether they were cut (``t``) and the
steps as indexes into the chunk's ``labels``. A chunk holds rows until its estimated size passes
:data:`CHUNK_BYTES`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

# Estimated BSON bytes per chunk: a quarter of MongoDB's limit, so an estimate off by a lot still fits.
CHUNK_BYTES = 4_000_000
_ROW_BYTES = 40  # a row's keys, numbers and array header
_STEP_BYTES = 8  # an index in the steps array (its key and an int32)


@dataclass(frozen=True, slots=True)
class JourneyRow:
    """Sessions of one visitor of a day that kept the same steps."""

    visitor: int
    sessions: int
    truncated: bool
    steps: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class JourneyDays:
    """The kept session steps of the settled days that have them (``rows`` by day)."""

    rows: Mapping[str, tuple[JourneyRow, ...]] = field(default_factory=dict)

    def __len__(self) -> int:  # the settled cache bounds its memory by items
        return sum(len(rows) for rows in self.rows.values())


def journey_documents(rows: Iterable[Mapping[str, object]]) -> list[dict[str, object]]:
    """The chunk documents (without ids) of one site and day from the transform's rows (``visitor``,
    ``sessions``, ``truncated``, ``steps``), in a deterministic order: at least one, empty rows for
    a day without sessions."""
    ordered = sorted(rows, key=lambda r: (int(r["visitor"]), list(r["steps"]), bool(r["truncated"])))  # type: ignore[call-overload, arg-type]
    chunks: list[dict[str, object]] = []
    labels: dict[str, int] = {}
    out: list[dict[str, object]] = []
    size = 0

    def close() -> None:
        chunks.append({"chunk": len(chunks), "labels": list(labels), "rows": list(out)})

    for row in ordered:
        steps = [str(s) for s in row["steps"]]  # type: ignore[attr-defined]
        cost = _ROW_BYTES + _STEP_BYTES * len(steps) + sum(len(s.encode()) + 8 for s in steps if s not in labels)
        if out and size + cost > CHUNK_BYTES:
            close()
            labels, out, size = {}, [], 0
            cost = _ROW_BYTES + _STEP_BYTES * len(steps) + sum(len(s.encode()) + 8 for s in set(steps))
        indexes = [labels.setdefault(s, len(labels)) for s in steps]
        out.append({"v": int(row["visitor"]), "n": int(row["sessions"]), "t": bool(row["truncated"]), "s": indexes})  # type: ignore[call-overload]
        size += cost
    close()
    return [{**chunk, "chunks": len(chunks)} for chunk in chunks]


def journey_rows(docs: Iterable[Mapping[str, object]]) -> dict[str, tuple[JourneyRow, ...]]:
    """Per day, the rows of its chunk documents (any order); a day whose chunks are not all there
    (read while being replaced) raises ValueError rather than answer from part of it."""
    by_day: dict[str, list[Mapping[str, object]]] = {}
    for doc in docs:
        by_day.setdefault(str(doc["day"]), []).append(doc)
    out: dict[str, tuple[JourneyRow, ...]] = {}
    for day, chunks in by_day.items():
        numbers = sorted(int(c["chunk"]) for c in chunks)  # type: ignore[call-overload]
        if numbers != list(range(int(chunks[0]["chunks"]))):  # type: ignore[call-overload]
            raise ValueError(f"journeys of {day}: chunks {numbers} of {chunks[0]['chunks']}")
        rows: list[JourneyRow] = []
        for chunk in sorted(chunks, key=lambda c: int(c["chunk"])):  # type: ignore[call-overload]
            labels: Sequence[str] = chunk["labels"]  # type: ignore[assignment]
            for r in chunk["rows"]:  # type: ignore[attr-defined]
                rows.append(JourneyRow(int(r["v"]), int(r["n"]), bool(r["t"]), tuple(labels[i] for i in r["s"])))
        out[day] = tuple(rows)
    return out
