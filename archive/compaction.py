"""Compaction of the archive (a directory or S3): merge the small files of hours that stopped receiving events.

Callers hold the archive lock (:mod:`archive.lock`): merging deletes files a
running Spark job may have listed.
"""

from __future__ import annotations

import datetime as dt

from archive.store import Archive

SETTLED_AFTER_S = 2 * 3600  # an hour partition gets late events rarely after this


def compact_ended_hours(
    archive: Archive, now: dt.datetime, settled_after_s: float = SETTLED_AFTER_S, min_files: int = 8
) -> dict[str, int]:
    """Merge each hour partition that ended ``settled_after_s`` before ``now`` and holds at
    least ``min_files`` files, then sweep writers' stale temporary files; return the counts."""
    cutoff = now - dt.timedelta(seconds=settled_after_s)
    merged = partitions = 0
    for path in archive.partitions():
        date, hour = path.parent.name.split("=", 1)[1], path.name.split("=", 1)[1]
        if dt.datetime.fromisoformat(f"{date}T{hour}:00+00:00") + dt.timedelta(hours=1) > cutoff:
            continue
        done = archive.compact(path, min_files=min_files)
        merged += done
        partitions += bool(done)
    swept = archive.sweep_temporary()
    return {"partitions": partitions, "files_merged": merged, "temporary_removed": swept}
