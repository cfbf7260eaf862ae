"""Render the reliability results (artifacts/reliability/results.jsonl) as a Markdown table.

``python -m tests.reliability.report [--write docs/reliability.md]``: the latest row per
scenario and scale, printed; with ``--write``, the table replaces the marked block of the file.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tests.reliability.conftest import RESULTS

BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"
COLUMNS = ["scenario", "scale", "load", "faults", "sent", "lost", "duplicated", "errors_5xx", "seconds", "notes", "at"]


def latest_rows(path: Path = RESULTS) -> list[dict]:
    rows: dict[tuple[str, str], dict] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                rows[(row["scenario"], row["scale"])] = row
    return sorted(rows.values(), key=lambda r: (r["scenario"], r["scale"]))


def table(rows: list[dict]) -> str:
    def cell(value: object) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(cell(row.get(c, "")) for c in COLUMNS) + " |" for row in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", type=Path, help="Markdown file whose results block is replaced")
    args = parser.parse_args(argv)
    rendered = table(latest_rows())
    print(rendered)
    if args.write:
        text = args.write.read_text() if args.write.exists() else f"{BEGIN}\n{END}\n"
        head, _, rest = text.partition(BEGIN)
        _, _, tail = rest.partition(END)
        args.write.write_text(f"{head}{BEGIN}\n{rendered}\n{END}{tail}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
