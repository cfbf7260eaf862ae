"""The rollup job's progress channel: one JSON line per day loaded, ``{"site": …, "day": …,
"events_read": n}``, appended by the job (:mod:`spark_jobs.rollup`, ``--progress``) to a file
its caller (:mod:`historical.rollups`) reads while it runs."""

from __future__ import annotations

import json
from pathlib import Path


def progress_line(site: str, day: str, events_read: int) -> str:
    """The record of one loaded day, a JSON object on one line (newline included)."""
    return json.dumps({"site": site, "day": day, "events_read": events_read}) + "\n"


class ProgressFile:
    """The days a running job has loaded so far, read from its progress file (each line is
    written whole; a line caught half-written waits for the next read)."""

    def __init__(self, path: Path, error: type[Exception] = ValueError) -> None:
        self.path = path
        self.error = error  # raised for a line that is not a day's record
        self._offset = 0
        self._partial = ""

    def new_days(self) -> list[tuple[str, str, int]]:
        """``(site, day, events read)`` of each day recorded since the last call."""
        try:
            with self.path.open(encoding="utf-8") as f:
                f.seek(self._offset)
                text = f.read()
                self._offset = f.tell()
        except FileNotFoundError:  # no day loaded yet
            return []
        *lines, self._partial = (self._partial + text).split("\n")
        return [self._parse(line) for line in lines if line]

    def _parse(self, line: str) -> tuple[str, str, int]:
        try:
            record = json.loads(line)
            return str(record["site"]), str(record["day"]), int(record["events_read"])
        except (ValueError, KeyError, TypeError):
            raise self.error(
                f"the rollup's progress file holds a line that is not a day's record: {line[:200]!r}"
            ) from None
