"""The formats a site's raw events are exported in (archive/export.py), and their media types.

No pyarrow here: the API names the formats in every web process, which loads the writer only
when an export runs (tests/integration/test_lean_web_process.py).
"""

FORMATS = ("parquet", "csv", "jsonl")
CONTENT_TYPES = {"parquet": "application/vnd.apache.parquet", "csv": "text/csv; charset=utf-8",
                 "jsonl": "application/x-ndjson"}  # fmt: skip
