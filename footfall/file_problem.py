"""Why an imported file cannot be imported, said the way an editor finds it: ``file:line, column X``."""

from __future__ import annotations

from pathlib import PurePath


class FileProblem(ValueError):
    """Why ``path`` cannot be imported, at ``line`` (None: the file) and ``column`` (None: the
    row or the file). The message names the file by its name only (a zip's member by its own)."""

    def __init__(self, path: PurePath | str, line: int | None, column: str | None, message: str) -> None:
        name = PurePath(path).name
        where = ":".join(str(part) for part in (name, line) if part is not None)
        super().__init__(f"{where}{f', column {column}' if column else ''}: {message}")
