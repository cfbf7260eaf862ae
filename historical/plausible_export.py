"""Plausible's CSV export read into imported days: pure, no store.

Plausible CE exports a site's history as a zip of daily aggregate tables, one CSV with a header
row each, named ``imported_<table>_<first>_<last>.csv`` (or ``<table>_<first>_<last>.csv``;
dates ``YYYYMMDD``), and imports that format from itself and from Google Analytics. A row is a
day (``date``, ``YYYY-MM-DD``) and a value of the table's dimension with its counts. Footfall
keeps (:data:`TABLES`) each day's totals (``imported_visitors``: visitors, page views, visits,
bounces and the visits' total duration in seconds) and, per value of its own dimensions, the
visitors, page views and visits (events and visitors for custom events), summed over a day's
rows of one value (a browser's versions, a source's UTM tags: so visitors there are a sum of
the rows' visitors). Other columns are ignored; exit pages, regions and cities have no
Footfall dimension and only their dates are checked.

Every row is checked before anything is stored: a problem raises
:class:`~footfall.file_problem.FileProblem` naming the file, its line and the column.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from footfall.file_problem import FileProblem

MAX_TABLE_BYTES = 1 << 30  # an uncompressed table larger than this is refused (a zip bomb, not an export)
DIRECT = "(direct)"  # Footfall's referrer label of visits without a referrer (Plausible's "Direct / None")
_NAME = re.compile(r"^(?:imported_)?(?P<table>[a-z_]+?)_(?P<first>\d{8})_(?P<last>\d{8})\.csv$")


@dataclass(frozen=True)
class Table:
    """What is read of one of Plausible's tables: ``values`` pairs each Footfall dimension with
    its column (none: the day's totals); ``counts`` maps Footfall's count names to the columns
    that must be there, ``optional`` to those read when there."""

    values: tuple[tuple[str, str], ...]
    counts: Mapping[str, str]
    optional: Mapping[str, str] = field(default_factory=dict)
    kept: bool = True


_VISITS = {"visits": "visits", "pageviews": "pageviews"}  # read where a table has them
TABLES: Mapping[str, Table] = {
    "visitors": Table(
        (),
        {
            "visitors": "visitors",
            "pageviews": "pageviews",
            "visits": "visits",
            "bounces": "bounces",
            "visit_duration": "visit_duration",
        },
    ),
    "pages": Table((("page", "page"),), {"visitors": "visitors", "pageviews": "pageviews"}, {"visits": "visits"}),
    "entry_pages": Table(
        (("entry_page", "entry_page"),),
        {"visitors": "visitors", "visits": "entrances"},
        {"pageviews": "pageviews", "bounces": "bounces", "visit_duration": "visit_duration"},
    ),
    "sources": Table(
        (
            ("ref", "source"),
            ("refurl", "referrer"),
            ("utm_source", "utm_source"),
            ("utm_medium", "utm_medium"),
            ("utm_campaign", "utm_campaign"),
        ),
        {"visitors": "visitors", "visits": "visits"},
        {"pageviews": "pageviews"},
    ),
    "locations": Table((("country", "country"),), {"visitors": "visitors"}, _VISITS),
    "devices": Table((("device", "device"),), {"visitors": "visitors"}, _VISITS),
    "browsers": Table((("browser", "browser"),), {"visitors": "visitors"}, _VISITS),
    "operating_systems": Table((("os", "operating_system"),), {"visitors": "visitors"}, _VISITS),
    "custom_events": Table((("event", "name"),), {"visitors": "visitors", "events": "events"}),
    "exit_pages": Table((), {"visitors": "visitors"}, kept=False),
}
# The dimensions an import can give, and so the ones the query layer may answer from one.
DIMENSIONS: tuple[str, ...] = tuple(dim for table in TABLES.values() for dim, _ in table.values)


@dataclass
class ImportedDay:
    """One day of an import: its totals (empty without ``imported_visitors`` rows for it) and,
    per dimension and value, the counts."""

    totals: dict[str, int] = field(default_factory=dict)
    breakdowns: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)


@dataclass(frozen=True)
class PlausibleExport:
    """What an export holds: its tables' file names, the days they cover, rows per table."""

    files: tuple[str, ...]
    first: dt.date
    last: dt.date
    rows: Mapping[str, int]
    days: Mapping[dt.date, ImportedDay]


def read_export(path: Path) -> PlausibleExport:
    """Every table of the zip at ``path`` read and checked (FileProblem at the first problem)."""
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise FileProblem(path, None, None, f"not a zip file: Plausible's export is one ({exc})") from None
    days: dict[dt.date, ImportedDay] = {}
    rows: dict[str, int] = {}
    files: list[str] = []
    ranges: list[tuple[dt.date, dt.date]] = []
    with archive:
        for info in archive.infolist():
            if info.is_dir():
                continue
            table, first, last = _table_of(info.filename)
            if info.file_size > MAX_TABLE_BYTES:
                raise FileProblem(info.filename, None, None, f"larger than {MAX_TABLE_BYTES:,} bytes uncompressed")
            with archive.open(info) as raw:
                text = io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")
                rows[table] = rows.get(table, 0) + _read_table(info.filename, table, first, last, text, days)
            files.append(info.filename)
            ranges.append((first, last))
    if "visitors" not in rows:
        raise FileProblem(path, None, None, "no imported_visitors table: the days' totals are in it")
    return PlausibleExport(
        files=tuple(sorted(files)),
        first=min(first for first, _ in ranges),
        last=max(last for _, last in ranges),
        rows=rows,
        days=dict(sorted(days.items())),
    )


def _table_of(name: str) -> tuple[str, dt.date, dt.date]:
    found = _NAME.match(Path(name).name)
    if found is None or found["table"] not in TABLES:
        tables = ", ".join(f"imported_{table}" for table in TABLES)
        raise FileProblem(name, None, None, f"not a table of Plausible's export ({tables}, _YYYYMMDD_YYYYMMDD.csv)")
    try:
        first, last = (dt.datetime.strptime(found[key], "%Y%m%d").date() for key in ("first", "last"))
    except ValueError:
        raise FileProblem(name, None, None, "the dates in its name are not dates (YYYYMMDD)") from None
    if last < first:
        raise FileProblem(name, None, None, "its name's last date is before its first")
    return found["table"], first, last


def _read_table(
    name: str, table: str, first: dt.date, last: dt.date, text: io.TextIOWrapper, days: dict[dt.date, ImportedDay]
) -> int:
    """Add the rows of one table to ``days``; the number of rows."""
    spec = TABLES[table]
    reader = csv.reader(text)
    try:
        header = next(reader)
    except StopIteration:
        raise FileProblem(name, 1, None, "empty: no header row") from None
    except (csv.Error, UnicodeDecodeError) as exc:
        raise FileProblem(name, 1, None, f"not CSV text ({exc})") from None
    index = {column: i for i, column in enumerate(header)}
    needed = ["date", *(column for _, column in spec.values), *spec.counts.values()]
    missing = [column for column in needed if column not in index]
    if missing:
        raise FileProblem(name, 1, None, f"no column {', '.join(missing)}")
    counts = {**spec.counts, **{key: column for key, column in spec.optional.items() if column in index}}
    rows = 0
    for line, row in _rows(name, reader):
        rows += 1
        day = _date(name, line, _cell(row, index["date"]), first, last)
        got = {key: _count(name, line, column, _cell(row, index[column])) for key, column in counts.items()}
        if not spec.kept:
            continue
        imported = days.setdefault(day, ImportedDay())
        if not spec.values:
            if imported.totals:
                raise FileProblem(name, line, "date", f"{day} is given twice")
            imported.totals.update(got)
        for dimension, column in spec.values:
            value = _value(dimension, _cell(row, index[column]))
            if value:
                into = imported.breakdowns.setdefault(dimension, {}).setdefault(value, {})
                for key, count in got.items():
                    into[key] = into.get(key, 0) + count
    return rows


def _rows(name: str, reader: Any) -> Iterator[tuple[int, list[str]]]:  # a csv reader: it counts lines
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except (csv.Error, UnicodeDecodeError) as exc:
            raise FileProblem(name, reader.line_num, None, f"not CSV text ({exc})") from None
        if row:
            yield reader.line_num, row


def _cell(row: list[str], i: int) -> str:
    return row[i].strip() if i < len(row) else ""


def _date(name: str, line: int, text: str, first: dt.date, last: dt.date) -> dt.date:
    try:
        day = dt.date.fromisoformat(text)
    except ValueError:
        raise FileProblem(name, line, "date", f"{text!r} is not a date (YYYY-MM-DD)") from None
    if not first <= day <= last:
        raise FileProblem(name, line, "date", f"{day} is outside the file's days, {first} to {last}")
    return day


def _count(name: str, line: int, column: str, text: str) -> int:
    if not text.isdigit():
        raise FileProblem(name, line, column, f"{text!r} is not a whole number of 0 or more")
    return int(text)


def _value(dimension: str, text: str) -> str:
    """Plausible's spelling of a value as Footfall's (see :mod:`footfall.vocabulary`)."""
    if dimension == "ref":
        return DIRECT if text in ("", "Direct / None") else text
    if dimension == "device":
        return text.lower()
    if dimension == "country":
        return text.upper()
    return text
