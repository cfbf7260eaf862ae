"""The rollup job's progress file: records written by the job are read back whole, however the
reads fall against the writes, and a line that is not a record is an error naming it."""

from __future__ import annotations

from pathlib import Path

import pytest

from historical.progress import ProgressFile, progress_line


def test_days_are_read_once_each_whatever_the_reads_fall_on(tmp_path: Path) -> None:
    path = tmp_path / "progress.jsonl"
    progress = ProgressFile(path)
    assert progress.new_days() == []  # the job has not written yet
    first, second = progress_line("shop", "2026-10-25", 1200), progress_line("blog", "2026-10-25", 0)
    with path.open("a", encoding="utf-8") as out:
        out.write(first + second[:9])  # the second caught half-written
    assert progress.new_days() == [("shop", "2026-10-25", 1200)]
    assert progress.new_days() == []
    with path.open("a", encoding="utf-8") as out:
        out.write(second[9:])
    assert progress.new_days() == [("blog", "2026-10-25", 0)]


@pytest.mark.parametrize("line", ["progress shop 2026-10-25", '{"site": "shop", "day": "2026-10-25"}', "[1, 2]"])
def test_a_line_that_is_not_a_record_is_an_error(tmp_path: Path, line: str) -> None:
    path = tmp_path / "progress.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(RuntimeError, match="not a day's record"):
        ProgressFile(path, RuntimeError).new_days()
