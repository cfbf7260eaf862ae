"""A site's archived events for a time range, as the rollup counts them, written as Parquet,
CSV or JSON lines a piece at a time.

The archive holds each event in its UTC hour's partition, possibly more than once (at-least-once
archiving); the rollup keeps one copy per event id, the first received (ties: lowest Kafka
partition, then offset: ``spark_jobs.transforms.dedupe``). The export reads one hour at a time,
keeps the same copy, and writes it out before reading the next, so its memory is one hour's
events whatever the range. Columns: :data:`EXPORT_SCHEMA` (docs/leaving.md describes each);
JSON lines are each event exactly as it was on the log (the archive's ``raw``), schema 1.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterator
from pathlib import PurePosixPath

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from archive.export_formats import FORMATS
from archive.schema import ARROW_SCHEMA, date_folder
from archive.store import Archive

# The archive's event columns, without the Kafka provenance and the raw copy (JSON lines carry that).
_LEFT_OUT = ("raw", "kafka_partition", "kafka_offset")
EXPORT_SCHEMA = pa.schema([pa.field("site_id", pa.string()), *(f for f in ARROW_SCHEMA if f.name not in _LEFT_OUT)])
_HOUR_MS = 3_600_000
JSONL_SLICE = 2000  # events joined into one piece of JSON lines


# What each format reads of the archive: the columns it writes, and those that choose the copy kept.
_CHOOSING = ("event_id", "ts", "received_at", "kafka_partition", "kafka_offset")
_READS = {
    "parquet": [*EXPORT_SCHEMA.names[1:], "kafka_partition", "kafka_offset"],
    "csv": [*EXPORT_SCHEMA.names[1:], "kafka_partition", "kafka_offset"],
    "jsonl": [*_CHOOSING, "raw"],
}


def export(archive: Archive, site_id: str, start_ms: int, end_ms: int, fmt: str) -> Iterator[bytes]:
    """The site's events with ``start_ms <= ts < end_ms`` in ``fmt``, a piece at a time (see the module's docstring)."""
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r}: one of {', '.join(FORMATS)}")
    return encode(hours(archive, site_id, start_ms, end_ms, _READS[fmt]), site_id, fmt)


def hours(
    archive: Archive, site_id: str, start_ms: int, end_ms: int, columns: list[str] | None = None
) -> Iterator[pa.Table]:
    """The site's events with ``start_ms <= ts < end_ms``, one UTC hour's table at a time, in
    time order, one copy per event id (the rollup's): the archive's ``columns`` (None: all;
    the ones choosing the copy are read in any case). Only what a format writes is read: an
    hour of ``raw`` alone is as big as the rest of its columns together."""
    if columns is not None:
        columns = [*dict.fromkeys([*_CHOOSING, *columns])]
    first = dt.datetime.fromtimestamp(start_ms // _HOUR_MS * _HOUR_MS / 1000, dt.UTC)
    dates = sorted({(first + dt.timedelta(hours=h)).date() for h in range(-(-(end_ms - start_ms) // _HOUR_MS) + 1)})
    for date in dates:
        by_hour: dict[PurePosixPath, list[PurePosixPath]] = defaultdict(list)
        for path in archive.files(date_folder(site_id, date.isoformat())):
            by_hour[path.parent].append(path)
        for hour in sorted(by_hour):
            hour_start = int(dt.datetime.fromisoformat(f"{date}T{hour.name.removeprefix('hour=')}:00+00:00")
                             .timestamp() * 1000)  # fmt: skip
            if hour_start + _HOUR_MS <= start_ms or hour_start >= end_ms:
                continue
            table = pa.concat_tables(archive.read(path, columns) for path in by_hour[hour])
            table = table.filter(pc.and_(pc.greater_equal(table["ts"], start_ms), pc.less(table["ts"], end_ms)))
            if table.num_rows:
                yield _first_copies(table).sort_by([("ts", "ascending"), ("event_id", "ascending")])


def _first_copies(table: pa.Table) -> pa.Table:
    """One row per event id: the first received, as the rollup keeps (see the module's docstring)."""
    order = table.sort_by([("event_id", "ascending"), ("received_at", "ascending"),
                           ("kafka_partition", "ascending"), ("kafka_offset", "ascending")])  # fmt: skip
    ids = order.column("event_id").combine_chunks()
    keep = pc.not_equal(ids, pa.concat_arrays([pa.array([None], pa.string()), ids[:-1]]))
    return order.filter(pc.fill_null(keep, True))


class _Buffer:
    """The file the writers write to: it keeps what they wrote until :meth:`take`."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.position = 0
        self.closed = False

    def write(self, data: bytes) -> int:
        self.parts.append(bytes(data))
        self.position += len(data)
        return len(data)

    def tell(self) -> int:
        return self.position

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True

    def take(self) -> bytes:
        data, self.parts = b"".join(self.parts), []
        return data


def encode(tables: Iterator[pa.Table], site_id: str, fmt: str) -> Iterator[bytes]:
    """``tables`` (of :func:`hours`) in ``fmt`` (one of :data:`FORMATS`), as consecutive pieces of
    one file: a piece per table, and the Parquet footer last."""
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r}: one of {', '.join(FORMATS)}")
    if fmt == "jsonl":
        for table in tables:
            # Newline-joined by Arrow, a slice of events at a time: no Python object per event, and
            # no copy of a whole hour beside the hour itself.
            raw = table.column("raw").combine_chunks()
            for start in range(0, len(raw), JSONL_SLICE):
                part = raw.slice(start, JSONL_SLICE)
                joined = pc.binary_join(pa.ListArray.from_arrays(pa.array([0, len(part)], pa.int32()), part), b"\n")
                yield joined[0].as_buffer().to_pybytes()
                yield b"\n"
        return
    buffer = _Buffer()
    writer = pq.ParquetWriter(buffer, EXPORT_SCHEMA) if fmt == "parquet" else pacsv.CSVWriter(buffer, EXPORT_SCHEMA)
    for table in tables:
        sites = pa.array([site_id] * table.num_rows, pa.string())
        events = table.add_column(0, "site_id", sites).select(EXPORT_SCHEMA.names)
        writer.write_table(events)
        yield buffer.take()
    writer.close()
    yield buffer.take()
