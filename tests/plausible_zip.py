"""Plausible-format exports made by the tests: a zip of ``imported_<table>_<first>_<last>.csv``
files with the columns Plausible CE writes (its CSV importer's input structures)."""

from __future__ import annotations

import csv
import datetime as dt
import io
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path

COLUMNS: Mapping[str, tuple[str, ...]] = {
    "visitors": ("date", "visitors", "pageviews", "bounces", "visits", "visit_duration"),
    "pages": ("date", "hostname", "page", "visits", "visitors", "pageviews", "scroll_depth", "pageleave_visitors"),
    "entry_pages": ("date", "entry_page", "visitors", "entrances", "visit_duration", "bounces", "pageviews"),
    "exit_pages": ("date", "exit_page", "visitors", "visit_duration", "exits", "bounces", "pageviews"),
    "sources": (
        "date",
        "source",
        "referrer",
        "utm_source",
        "utm_medium",
        "utm_campaign",
        "utm_content",
        "utm_term",
        "pageviews",
        "visitors",
        "visits",
        "visit_duration",
        "bounces",
    ),
    "locations": ("date", "country", "region", "city", "visitors", "visits", "visit_duration", "bounces", "pageviews"),
    "devices": ("date", "device", "visitors", "visits", "visit_duration", "bounces", "pageviews"),
    "browsers": ("date", "browser", "browser_version", "visitors", "visits", "visit_duration", "bounces", "pageviews"),
    "operating_systems": (
        "date",
        "operating_system",
        "operating_system_version",
        "visitors",
        "visits",
        "visit_duration",
        "bounces",
        "pageviews",
    ),
    "custom_events": ("date", "name", "link_url", "path", "visitors", "events"),
}


def table_csv(table: str, rows: Sequence[Mapping[str, object]], columns: Sequence[str] | None = None) -> str:
    """One table's CSV: ``columns`` (default: Plausible's) as the header, each row's values
    (0 for a count it lacks, "" for a text)."""
    columns = columns or COLUMNS[table]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([row.get(column, 0 if column in COUNTS else "") for column in columns])
    return out.getvalue()


COUNTS = {
    "visitors",
    "pageviews",
    "bounces",
    "visits",
    "visit_duration",
    "entrances",
    "exits",
    "events",
    "pageleave_visitors",
}


def write_export(
    path: Path, tables: Mapping[str, Sequence[Mapping[str, object]]], first: dt.date, last: dt.date
) -> Path:
    """A zip at ``path`` holding ``tables`` (table -> rows), named for ``first`` to ``last``."""
    span = f"{first:%Y%m%d}_{last:%Y%m%d}"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for table, rows in tables.items():
            archive.writestr(f"imported_{table}_{span}.csv", table_csv(table, rows))
    return path


# A two-day export of known counts, every kept table present (the tests' truth).
D1, D2 = dt.date(2025, 3, 1), dt.date(2025, 3, 2)
TABLES = {
    "visitors": [
        {"date": "2025-03-01", "visitors": 40, "pageviews": 90, "bounces": 10, "visits": 50, "visit_duration": 3000},
        {"date": "2025-03-02", "visitors": 30, "pageviews": 60, "bounces": 5, "visits": 35, "visit_duration": 2100},
    ],
    "pages": [
        {"date": "2025-03-01", "hostname": "example.com", "page": "/", "visitors": 30, "pageviews": 60, "visits": 35},
        {"date": "2025-03-01", "hostname": "example.com", "page": "/pricing", "visitors": 12, "pageviews": 30},
        {"date": "2025-03-02", "hostname": "example.com", "page": "/", "visitors": 30, "pageviews": 60},
    ],
    "sources": [
        {"date": "2025-03-01", "source": "Direct / None", "visitors": 20, "visits": 25, "pageviews": 45},
        {"date": "2025-03-01", "source": "Google", "referrer": "https://www.google.com/", "visitors": 15, "visits": 20,
         "pageviews": 35},
        {"date": "2025-03-01", "source": "Newsletter", "utm_source": "news", "utm_medium": "email",
         "utm_campaign": "spring", "visitors": 5, "visits": 5, "pageviews": 10},
    ],
    "locations": [
        {"date": "2025-03-01", "country": "de", "region": "DE-BE", "visitors": 25, "visits": 30, "pageviews": 55},
        {"date": "2025-03-01", "country": "DE", "region": "DE-HH", "visitors": 5, "visits": 5, "pageviews": 10},
        {"date": "2025-03-01", "country": "FR", "visitors": 10, "visits": 15, "pageviews": 25},
    ],
    "browsers": [
        {"date": "2025-03-01", "browser": "Firefox", "browser_version": "130", "visitors": 3, "pageviews": 5},
        {"date": "2025-03-01", "browser": "Firefox", "browser_version": "131", "visitors": 4, "pageviews": 9},
    ],
    "devices": [{"date": "2025-03-02", "device": "Desktop", "visitors": 30, "visits": 35, "pageviews": 60}],
    "custom_events": [{"date": "2025-03-02", "name": "Signup", "visitors": 4, "events": 6}],
    "exit_pages": [{"date": "2025-03-02", "exit_page": "/", "visitors": 30, "exits": 35}],
}  # fmt: skip
