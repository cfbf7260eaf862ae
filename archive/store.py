"""The raw event archive (the master dataset): immutable Parquet files under ``ARCHIVE_URL``.

Layout and columns: :mod:`archive.schema`. This module writes, lists and compacts files,
on a local directory or an S3-compatible object store, through one interface (``pyarrow.fs``).

Atomicity: a file appears whole or not at all. Locally it is written under a hidden
temporary name (Spark and every reader skip names starting with ``.`` or ``_``), flushed
and fsync'd, then renamed into place and the directory fsync'd, so a crash (kill -9) at any
moment leaves at most a hidden temporary file, which :func:`sweep_temporary` removes. A
failed fsync raises (:func:`~footfall_capture.durable.fsync_directory`), so the archiver does
not commit the offsets of a batch whose file might not survive a crash. Object stores have
no rename: a file is serialized in memory first, then uploaded as one object (one PUT, or a
multipart upload completed only when the stream closes), so a crash mid-upload leaves no
object, only an incomplete upload the bucket's lifecycle rule aborts. Other remote schemes
(``hdfs://``, ``gs://``) go through pyarrow's own filesystems.
"""

from __future__ import annotations

import os
import time
import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from archive.schema import ARROW_SCHEMA, EVENTS_DIR
from footfall.config import S3_ARCHIVE_SCHEMES, ArchiveS3, Config
from footfall_capture.durable import fsync_directory

TEMP_PREFIX = ".tmp-"
STALE_TEMP_S = 3600
PARTITION_DEPTH = 3  # site_id=…/date=…/hour=…


@dataclass(frozen=True, slots=True)
class ArchiveRow:
    partition: str  # site_id=…/date=…/hour=…
    row: dict[str, object]


def s3_filesystem(s3: ArchiveS3) -> pafs.S3FileSystem:
    """pyarrow's S3 filesystem for these settings (path-style requests to a custom endpoint)."""
    options: dict[str, object] = {"region": s3.region}
    if s3.access_key_id and s3.secret_access_key:
        options |= {"access_key": s3.access_key_id, "secret_key": s3.secret_access_key}
    if s3.endpoint:
        parts = urlsplit(s3.endpoint)
        options |= {"endpoint_override": parts.netloc, "scheme": parts.scheme}
    return pafs.S3FileSystem(**options)


class Archive:
    """Writes batches of rows as new files (one per Hive partition per batch), lists and compacts them."""

    def __init__(self, url: str, s3: ArchiveS3 | None = None) -> None:
        self.url = url.rstrip("/")
        parts = urlsplit(self.url)
        self.local = parts.scheme in ("", "file")
        self.fs: pafs.FileSystem
        if self.local:
            self.root = Path(parts.path) / EVENTS_DIR
            self.fs = pafs.LocalFileSystem()
            base = parts.path
        elif parts.scheme in S3_ARCHIVE_SCHEMES:
            self.fs = s3_filesystem(s3 or ArchiveS3(None, None, None))
            base = f"{parts.netloc}{parts.path}"
        else:
            self.fs, base = pafs.FileSystem.from_uri(self.url)
        self.root_path = f"{base.rstrip('/')}/{EVENTS_DIR}"

    @classmethod
    def from_config(cls, cfg: Config) -> Archive:
        """The archive at ``ARCHIVE_URL``, with the object store's endpoint and keys."""
        return cls(cfg.archive_url, cfg.archive_s3)

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
            # Whole file in memory first: a failure while encoding uploads nothing, and the
            # object exists only once its upload completes.
            sink = pa.BufferOutputStream()
            pq.write_table(table, sink, compression="zstd")
            with self.fs.open_output_stream(f"{self.root_path}/{relative}") as out:
                out.write(sink.getvalue())
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

    # --- listing and housekeeping ----------------------------------------------------
    def _listing(self, under: str = "") -> list[pafs.FileInfo]:
        """Every file under ``events/`` or a folder of it (one recursive listing; an object
        store lists only complete objects)."""
        selector = pafs.FileSelector(f"{self.root_path}/{under}".rstrip("/"), recursive=True, allow_not_found=True)
        return [info for info in self.fs.get_file_info(selector) if info.type == pafs.FileType.File]

    def _relative(self, info: pafs.FileInfo) -> PurePosixPath:
        return PurePosixPath(info.path.removeprefix(self.root_path).lstrip("/"))

    def files(self, partition: PurePosixPath | str | None = None) -> list[PurePosixPath]:
        """The archive's data files (``part-*.parquet``, relative to ``events/``), of one partition or all."""
        found = []
        for info in self._listing("" if partition is None else str(PurePosixPath(partition))):
            path = self._relative(info)
            if len(path.parts) == PARTITION_DEPTH + 1 and _is_data(path.name):
                found.append(path)
        return sorted(found)

    def size(self, folders: Iterable[str], above: int | None = None) -> int:
        """The bytes of the data files under ``folders`` (relative to ``events/``, e.g.
        ``site_id=…/date=…``); the count stops once it exceeds ``above``."""
        total = 0
        for folder in folders:
            total += sum(info.size or 0 for info in self._listing(folder) if _is_data(PurePosixPath(info.path).name))
            if above is not None and total > above:
                break
        return total

    def partitions(self) -> list[PurePosixPath]:
        """Every ``site_id=/date=/hour=`` partition holding data files, relative to ``events/``."""
        return sorted({path.parent for path in self.files()})

    def read(self, path: PurePosixPath | str, columns: Sequence[str] | None = None) -> pa.Table:
        """One data file (relative to ``events/``) with the archive's schema."""
        return pq.read_table(
            f"{self.root_path}/{path}",
            filesystem=self.fs,
            schema=ARROW_SCHEMA,
            columns=list(columns) if columns else None,
        )

    def sweep_temporary(self, older_than_s: float = STALE_TEMP_S) -> int:
        """Delete temporary files left by writers that died; return how many. (An object store
        has none: an upload cut short is no object.)"""
        if not self.local:
            return 0
        cutoff = time.time() - older_than_s
        removed = 0
        for path in self.root.glob(f"site_id=*/date=*/hour=*/{TEMP_PREFIX}*"):
            if path.stat().st_mtime < cutoff:
                path.unlink(missing_ok=True)
                removed += 1
        return removed

    def compact(self, partition: PurePosixPath | str, min_files: int = 8) -> int:
        """Merge a partition's small files into one, without duplicate event ids.

        The merged file is in place (renamed locally, a completed object on S3) before the
        sources are deleted, so a reader never misses a row (it may briefly see both, which
        the rollup's dedup absorbs, as would the next compaction after a crash in between).
        Returns the number of files merged (0 if there were fewer than ``min_files``)."""
        sources = self.files(partition)
        if len(sources) < min_files:
            return 0
        table = _dedupe(pa.concat_tables(self.read(path) for path in sources))
        self._write_table(str(PurePosixPath(partition)), f"part-{uuid.uuid4().hex}.parquet", table)
        for path in sources:
            self.fs.delete_file(f"{self.root_path}/{path}")
        if self.local:
            fsync_directory(self.root / partition)
        return len(sources)


def _is_data(name: str) -> bool:
    return name.startswith("part-") and name.endswith(".parquet")


def _dedupe(table: pa.Table) -> pa.Table:
    """Keep the earliest received copy of each event id."""
    order = table.sort_by([("event_id", "ascending"), ("received_at", "ascending")])
    ids = order.column("event_id")
    if len(ids) == 0:
        return order
    keep = pc.not_equal(ids, pa.concat_arrays([pa.array([None], pa.string()), ids.combine_chunks()[:-1]]))
    return order.filter(pc.fill_null(keep, True))


def read_event_ids(archive: Archive, partitions: Sequence[str] | None = None) -> list[str]:
    """All event ids in the archive (duplicates included), e.g. for audits and tests."""
    wanted = {PurePosixPath(p) for p in partitions or []}
    ids: list[str] = []
    for path in archive.files():
        if wanted and path.parent not in wanted:
            continue
        ids.extend(archive.read(path, columns=["event_id"]).column("event_id").to_pylist())
    return ids
