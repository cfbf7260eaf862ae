"""Plausible's CSV export read into imported days (historical.plausible_export): counts per
day and value as the tables give them, and a clear error naming file, line and column."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from footfall.file_problem import FileProblem
from historical.plausible_export import DIRECT, read_export
from tests.plausible_zip import D1, D2, TABLES, table_csv, write_export


def test_days_totals_and_values_as_the_tables_give_them(tmp_path: Path) -> None:
    export = read_export(write_export(tmp_path / "export.zip", TABLES, D1, D2))

    assert (export.first, export.last) == (D1, D2)
    assert export.rows == {table: len(rows) for table, rows in TABLES.items()}
    assert len(export.files) == len(TABLES)
    one, two = export.days[D1], export.days[D2]
    assert one.totals == {"visitors": 40, "pageviews": 90, "visits": 50, "bounces": 10, "visit_duration": 3000}
    assert one.breakdowns["page"] == {
        "/": {"visitors": 30, "pageviews": 60, "visits": 35},
        "/pricing": {"visitors": 12, "pageviews": 30, "visits": 0},
    }
    assert one.breakdowns["ref"] == {
        DIRECT: {"visitors": 20, "visits": 25, "pageviews": 45},
        "Google": {"visitors": 15, "visits": 20, "pageviews": 35},
        "Newsletter": {"visitors": 5, "visits": 5, "pageviews": 10},
    }
    assert one.breakdowns["refurl"] == {"https://www.google.com/": {"visitors": 15, "visits": 20, "pageviews": 35}}
    assert one.breakdowns["utm_medium"] == {"email": {"visitors": 5, "visits": 5, "pageviews": 10}}
    # One value's rows (regions of a country, versions of a browser) are summed.
    assert one.breakdowns["country"] == {
        "DE": {"visitors": 30, "visits": 35, "pageviews": 65},
        "FR": {"visitors": 10, "visits": 15, "pageviews": 25},
    }
    assert one.breakdowns["browser"] == {"Firefox": {"visitors": 7, "visits": 0, "pageviews": 14}}
    assert two.breakdowns == {
        "page": {"/": {"visitors": 30, "pageviews": 60, "visits": 0}},
        "device": {"desktop": {"visitors": 30, "visits": 35, "pageviews": 60}},
        "event": {"Signup": {"visitors": 4, "events": 6}},
    }


def test_tables_of_an_older_export_without_optional_columns_are_read(tmp_path: Path) -> None:
    path = tmp_path / "old.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("visitors_20250301_20250301.csv", table_csv("visitors", TABLES["visitors"][:1]))
        columns = ("date", "device", "visitors", "visits", "visit_duration", "bounces")
        archive.writestr("imported_devices_20250301_20250301.csv", table_csv("devices", [
            {"date": "2025-03-01", "device": "Mobile", "visitors": 8, "visits": 9}], columns))  # fmt: skip
    export = read_export(path)
    assert export.days[D1].breakdowns == {"device": {"mobile": {"visitors": 8, "visits": 9}}}


def problem(tmp_path: Path, tables: dict[str, list[dict[str, object]]], name: str = "export.zip") -> str:
    with pytest.raises(FileProblem) as raised:
        read_export(write_export(tmp_path / name, tables, D1, D2))
    return str(raised.value)


def test_bad_input_names_the_file_line_and_column(tmp_path: Path) -> None:
    visitors = TABLES["visitors"]
    span = "20250301_20250302"
    assert problem(tmp_path, {"pages": TABLES["pages"]}) == (
        "export.zip: no imported_visitors table: the days' totals are in it"
    )
    bad_date = [visitors[0], {**visitors[1], "date": "02/03/2025"}]
    assert problem(tmp_path, {"visitors": bad_date}) == (
        f"imported_visitors_{span}.csv:3, column date: '02/03/2025' is not a date (YYYY-MM-DD)"
    )
    outside = [{**visitors[0], "date": "2025-04-01"}]
    assert problem(tmp_path, {"visitors": outside}) == (
        f"imported_visitors_{span}.csv:2, column date: 2025-04-01 is outside the file's days, 2025-03-01 to 2025-03-02"
    )
    negative = [visitors[0], {**visitors[1], "pageviews": -3}]
    assert problem(tmp_path, {"visitors": negative}) == (
        f"imported_visitors_{span}.csv:3, column pageviews: '-3' is not a whole number of 0 or more"
    )
    twice = [visitors[0], visitors[0]]
    assert problem(tmp_path, {"visitors": twice}) == (
        f"imported_visitors_{span}.csv:3, column date: 2025-03-01 is given twice"
    )

    path = tmp_path / "missing.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"imported_pages_{span}.csv", "date,page,pageviews\n2025-03-01,/,3\n")
    with pytest.raises(FileProblem, match=rf"^imported_pages_{span}.csv:1: no column visitors$"):
        read_export(path)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("notes.txt", "hello")
    with pytest.raises(FileProblem, match=r"^notes.txt: not a table of Plausible's export \(imported_visitors, "):
        read_export(path)
    (tmp_path / "export.csv").write_text("date,visitors\n")
    with pytest.raises(FileProblem, match=r"^export.csv: not a zip file"):
        read_export(tmp_path / "export.csv")
