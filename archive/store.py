"""The raw event archive (the master dataset): immutable Parquet files under ``ARCHIVE_URL``.

Layout and columns: :mod:`archive.schema`. This module writes and compacts files.

Atomicity: a file is written under a hidden temporary name (Spark and every reader skip
names starting with ``.`` or ``_``), flushed and fsync'd, then renamed into place and the
directory fsync'd, so a reader sees a whole file or none, and a crash (kill -9) at any
moment leaves at most a hidden temporary file, which :func:`sweep_temporary` removes. A
failed fsync raises (:func:`~footfall_capture.durable.fsync_directory`), so the archiver does not
commit the offsets of a batch whose file might not survive a crash. On
object stores (``s3a://``, ``gs://``) a file becomes visible only when its upload completes,
which gives the same guarantee.
"""

from __future__ import annotations

import os
import time
import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from archive.schema import ARROW_SCHEMA, EVENTS_DIR
from footfall_capture.durable import fsync_directory

TEMP_PREFIX = ".tmp-"
STALE_TEMP_S = 3600


@dataclass(frozen=True, slots=True)
class ArchiveRow:
    partition: str  # site_id=…/date=…/hour=…
    row: dict[str, object]


class Archive:
    """Writes batches of rows as new files; one file per Hive partition per batch."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")
        parts = urlsplit(self.url)
        self.local = parts.scheme in ("", "file")
        if self.local:
            self.root = Path(parts.path) / EVENTS_DIR
            self.fs = None
        else:
            # Hadoop's s3a:// is plain s3:// to Arrow.
            scheme = "s3" if parts.scheme == "s3a" else parts.scheme
            self.fs, base = pafs.FileSystem.from_uri(f"{scheme}://{parts.netloc}{parts.path}")
            self.root_path = f"{base.rstrip('/')}/{EVENTS_DIR}"

    @property
    def events_url(self) -> str:
        """Where Spark reads the events (``file:///…/events`` or ``s3a://…/events``)."""
        return f"{self.url}/{EVENTS_DIR}"

    def write(self, rows: Iterable[ArchiveRow]) -> list[str]:
        """Write ``rows`` durably; return the new files' relative paths."""
        by_partition: dict[str, list[dict[str, object]]] = defaultdict(list)
        for item in rows:
            by_partition[item.partition].append(item.row)
        written = []
        for partition, part_rows in sorted(by_partition.items()):
            table = pa.Table.from_pylist(part_rows, schema=ARROW_SCHEMA)
            name = f"part-{uuid.uuid4().hex}.parquet"
            written.append(self._write_table(partition, name, table))
        return written

    def _write_table(self, partition: str, name: str, table: pa.Table) -> str:
        relative = f"{partition}/{name}"
        if not self.local:
            assert self.fs is not None
            self.fs.create_dir(f"{self.root_path}/{partition}", recursive=True)
            pq.write_table(table, f"{self.root_path}/{relative}", filesystem=self.fs, compression="zstd")
            return relative
        directory = self.root / partition
        directory.mkdir(parents=True, exist_ok=True)
        temporary = directory / f"{TEMP_PREFIX}{name}"
        with temporary.open("wb") as handle:
            pq.write_table(table, handle, compression="zstd")
            handle.flush()
            os.fsync(handle.fileno())
        temporary.rename(directory / name)
        fsync_directory(directory)
        return relative

    # --- housekeeping (local archives) ----------------------------------------------
    def partitions(self) -> list[Path]:
        """Every ``site_id=/date=/hour=`` directory of a local archive."""
        return sorted(p for p in self.root.glob("site_id=*/date=*/hour=*") if p.is_dir()) if self.local else []

    def sweep_temporary(self, older_than_s: float = STALE_TEMP_S) -> int:
        """Delete temporary files left by writers that died; return how many."""
        if not self.local:
            return 0
        cutoff = time.time() - older_than_s
        removed = 0
        for path in self.root.glob(f"site_id=*/date=*/hour=*/{TEMP_PREFIX}*"):
            if path.stat().st_mtime < cutoff:
                path.unlink(missing_ok=True)
                removed += 1
        return removed

    def compact(self, partition: Path, min_files: int = 8) -> int:
        """Merge a partition's small files into one, without duplicate event ids.

        The merged file is renamed into place before the sources are deleted, so a reader
        never misses a row (it may briefly see both, which the rollup's dedup absorbs).
        Returns the number of files merged (0 if there were fewer than ``min_files``)."""
        sources = sorted(p for p in partition.glob("part-*.parquet"))
        if len(sources) < min_files:
            return 0
        table = pa.concat_tables(pq.read_table(p, schema=ARROW_SCHEMA) for p in sources)
        table = _dedupe(table)
        self._write_table(str(partition.relative_to(self.root)), f"part-{uuid.uuid4().hex}.parquet", table)
        for path in sources:
            path.unlink()
        fsync_directory(partition)
        return len(sources)


def _dedupe(table: pa.Table) -> pa.Table:
    """Keep the earliest received copy of each event id."""
    order = table.sort_by([("event_id", "ascending"), ("received_at", "ascending")])
    ids = order.column("event_id")
    if len(ids) == 0:
        return order
    keep = pc.not_equal(ids, pa.concat_arrays([pa.array([None], pa.string()), ids.combine_chunks()[:-1]]))
    return order.filter(pc.fill_null(keep, True))


def read_event_ids(archive: Archive, partitions: Sequence[str] | None = None) -> list[str]:
    """All event ids in a local archive (duplicates included), e.g. for audits and tests."""
    paths = archive.root.glob("site_id=*/date=*/hour=*/part-*.parquet")
    wanted = set(partitions or [])
    ids: list[str] = []
    for path in paths:
        if wanted and str(path.parent.relative_to(archive.root)) not in wanted:
            continue
        ids.extend(pq.read_table(path, columns=["event_id"]).column("event_id").to_pylist())
    return ids
