"""Render the reliability results (artifacts/reliability/results.jsonl) as a Markdown table.

``python -m tests.reliability.report [--scale full] [--write docs/reliability.md]``: the latest
row per scenario and scale (only the given scale with ``--scale``), printed; with ``--write``,
the table replaces the marked block of the file. Each row names the command that reproduces it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tests.reliability.conftest import RESULTS

BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"
COLUMNS = [
    "scenario", "scale", "load", "faults", "sent", "lost", "duplicated", "errors_5xx", "seconds", "notes", "at",
    "reproduce",
]  # fmt: skip


def latest_rows(path: Path = RESULTS, scale: str | None = None) -> list[dict]:
    """The last row recorded for each (scenario, scale), of ``scale`` only if given."""
    rows: dict[tuple[str, str], dict] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                if scale is None or row["scale"] == scale:
                    rows[(row["scenario"], row["scale"])] = row
    return sorted(rows.values(), key=lambda r: (r["scenario"], r["scale"]))


def reproduce(row: dict) -> str:
    """The command that measures ``row`` again (rows recorded before the test id was kept have none)."""
    test = row.get("test", "").rpartition("::")[2]
    if not test:
        return ""
    if row["scale"] == "full":
        return f"`deploy/local/reliability.sh -k {test}`"
    return f"`python -m pytest tests/reliability -m reliability -k {test}` (stack env)"


def table(rows: list[dict]) -> str:
    def cell(value: object) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += [
        "| " + " | ".join(cell(reproduce(row) if c == "reproduce" else row.get(c, "")) for c in COLUMNS) + " |"
        for row in rows
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", type=Path, help="Markdown file whose results block is replaced")
    parser.add_argument("--scale", choices=["ci", "full"], help="only the rows measured at this size")
    args = parser.parse_args(argv)
    rendered = table(latest_rows(scale=args.scale))
    print(rendered)
    if args.write:
        text = args.write.read_text() if args.write.exists() else f"{BEGIN}\n{END}\n"
        head, _, rest = text.partition(BEGIN)
        _, _, tail = rest.partition(END)
        args.write.write_text(f"{head}{BEGIN}\n{rendered}\n{END}{tail}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
