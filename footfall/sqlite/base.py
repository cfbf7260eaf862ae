"""The backend's ``DatabaseWrapper`` (Django loads ``<ENGINE>.base``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.db.backends.sqlite3.base import DatabaseWrapper as SQLiteWrapper


class DatabaseWrapper(SQLiteWrapper):
    """Django's SQLite wrapper; before opening a file database it makes the file's folder."""

    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        name = str(conn_params.get("database", ""))
        # In-memory and URI databases (tests) name no folder to make.
        if name and name != ":memory:" and not name.startswith("file:"):
            Path(name).parent.mkdir(parents=True, exist_ok=True)
        return super().get_new_connection(conn_params)
