"""CSV of time series and breakdowns, as the API (``Accept: text/csv``) and the dashboard give it.

Written with the standard library's csv module: the tables are flat and small, and the one
thing a CSV library would not do for us is the spreadsheet-formula guard below.
"""

from __future__ import annotations

import csv
import io
from typing import Any

# Cells starting with these are formulas to spreadsheet programs; URLs and referrers are
# attacker-controlled, so such cells are prefixed with a quote (OWASP's CSV injection advice).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: object) -> object:
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return "" if value is None else value


def to_csv(data: Any) -> str:
    """A query answer (a time series, a breakdown, or an error) as CSV with its header row,
    also when it has no rows."""
    rows = _rows(data)
    out = io.StringIO()
    columns = list(dict.fromkeys(k for row in rows for k in row)) or _columns(data)
    if columns:
        writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: _cell(row.get(k)) for k in columns})
    return out.getvalue()


def _columns(data: Any) -> list[str]:
    """The header of an empty table (a CSV with no rows still says what it would hold)."""
    if isinstance(data, dict) and "points" in data:
        return ["t", str(data.get("metric", "value")), "source"]
    if isinstance(data, dict) and isinstance(data.get("metrics"), list):
        return ["value", *data["metrics"]]
    if isinstance(data, dict) and "property" in data:  # an event's property values
        return ["value", "events", "visitors"]
    return []


def _rows(data: Any) -> list[dict[str, object]]:
    if not isinstance(data, dict):
        return []
    if "points" in data:
        return [
            {"t": p["t"], data.get("metric", "value"): p["value"], "source": p.get("source")} for p in data["points"]
        ]
    if "results" in data and isinstance(data["results"], list):
        return list(data["results"])
    if "error" in data:
        return [data["error"]]
    return [data]
