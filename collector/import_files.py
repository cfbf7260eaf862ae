"""Read an export file of Umami, GoatCounter or Footfall row by row as importable records.

:func:`records` yields ``(line, record)``; a row that cannot be imported raises
:class:`FileProblem` naming the file, the line (CSV and JSON lines: as an editor counts them;
Parquet: the row, from 1) and the column. The import command reads a file twice, checking every
row before it sends any, so a bad file imports nothing.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq

from collector.beacon import BadBeacon
from collector.imported_formats import (
    EXPORT_COLUMNS,
    GOATCOUNTER_COLUMNS,
    UMAMI_COLUMNS,
    BadRow,
    flatten_event,
    missing_columns,
    parse_export_row,
    parse_goatcounter,
    parse_umami,
)
from collector.importing import Record
from footfall.file_problem import FileProblem

FORMATS = ("umami", "goatcounter", "footfall")
Rows = Iterator[tuple[int, Record]]


def records(
    path: Path, fmt: str, site_id: str, base_url: str | None, from_site: str | None
) -> Iterator[tuple[int, Record]]:
    """The records of ``path`` in ``fmt`` for ``site_id``. ``from_site``: the site (or Umami
    website) whose rows to take when the file names another or several."""
    if not path.is_file():
        raise FileProblem(path, None, None, "no such file")
    if fmt == "footfall" and path.suffix == ".parquet":
        yield from _parquet(path, site_id, from_site)
    elif fmt == "footfall" and path.suffix in (".jsonl", ".ndjson"):
        yield from _json_lines(path, site_id, from_site)
    else:
        yield from _csv(path, fmt, site_id, base_url, from_site)


def _csv(
    path: Path, fmt: str, site_id: str, base_url: str | None, from_site: str | None
) -> Iterator[tuple[int, Record]]:
    required = {"umami": UMAMI_COLUMNS, "goatcounter": GOATCOUNTER_COLUMNS, "footfall": EXPORT_COLUMNS}[fmt]
    with path.open(newline="", encoding="utf-8-sig") as file:
        reader = csv.DictReader(file)
        header = reader.fieldnames or []
        if fmt == "goatcounter" and header and header[0].endswith("Path") and header[0] != "2Path":
            raise FileProblem(path, 1, header[0], "a GoatCounter export of another version than 2")
        if missing := missing_columns(header, required):
            raise FileProblem(path, 1, None, f"not a {fmt} export: no column {', '.join(missing)}")
        seen_sites: set[str] = set()
        start = reader.line_num
        for row in reader:
            line, start = start + 1, reader.line_num
            if not any(row.values()):
                continue
            origin = row.get("website_id") if fmt == "umami" else row.get("site_id") if fmt == "footfall" else None
            if origin is not None and not _wanted(path, line, origin, site_id, from_site, seen_sites, fmt):
                continue
            try:
                if fmt == "umami":
                    record = parse_umami(row, site_id)
                elif fmt == "goatcounter":
                    if not base_url:
                        raise FileProblem(path, None, None, "--base-url is needed: the site has no domain")
                    record = parse_goatcounter(row, site_id, base_url, ",".join(row.get(k) or "" for k in header))
                else:
                    record = parse_export_row(row, site_id)
            except (BadRow, BadBeacon) as exc:
                raise _problem(path, line, exc) from None
            yield line, record


def _parquet(path: Path, site_id: str, from_site: str | None) -> Rows:
    try:
        file = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow's errors have no common base but Exception: any means "not Parquet"
        raise FileProblem(path, None, None, f"not a Parquet file ({exc})") from None
    if missing := missing_columns(file.schema_arrow.names, EXPORT_COLUMNS):
        raise FileProblem(path, None, None, f"not a Footfall export: no column {', '.join(missing)}")
    line, seen_sites = 0, set()
    for batch in file.iter_batches(batch_size=10_000):
        for row in batch.to_pylist():
            line += 1
            if not _wanted(path, line, str(row["site_id"]), site_id, from_site, seen_sites, "footfall"):
                continue
            try:
                yield line, parse_export_row(row, site_id)
            except (BadRow, BadBeacon) as exc:
                raise _problem(path, line, exc) from None


def _json_lines(path: Path, site_id: str, from_site: str | None) -> Rows:
    seen_sites: set[str] = set()
    with path.open(encoding="utf-8") as file:
        for line, text in enumerate(file, start=1):
            if not text.strip():
                continue
            try:
                event = json.loads(text)
            except ValueError:
                raise FileProblem(path, line, None, "not a JSON object") from None
            if not isinstance(event, dict):
                raise FileProblem(path, line, None, "not a JSON object")
            if not _wanted(path, line, str(event.get("site_id")), site_id, from_site, seen_sites, "footfall"):
                continue
            try:
                yield line, parse_export_row(flatten_event(event), site_id)
            except (BadRow, BadBeacon) as exc:
                raise _problem(path, line, exc) from None


def _wanted(path: Path, line: int, origin: str, site_id: str, from_site: str | None, seen: set[str], fmt: str) -> bool:
    """Whether a row of site (or Umami website) ``origin`` is to be imported into ``site_id``."""
    if from_site is not None:
        return origin == from_site
    seen.add(origin)
    if fmt == "footfall" and origin != site_id:
        raise FileProblem(path, line, "site_id", f"the file holds events of site {origin!r}; importing them into "
                          f"{site_id!r} needs --from-site {origin}")  # fmt: skip
    if len(seen) > 1:
        raise FileProblem(path, line, "website_id", f"the file holds several websites ({', '.join(sorted(seen))}): "
                          "name the one to import with --from-site")  # fmt: skip
    return True


def _problem(path: Path, line: int, exc: BadRow | BadBeacon) -> FileProblem:
    if isinstance(exc, BadRow):
        return FileProblem(path, line, exc.column, str(exc))
    return FileProblem(path, line, None, exc.detail or exc.reason)
