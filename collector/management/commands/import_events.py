"""``manage.py import_events FILE --site SITE [--format jsonl|combined]``: backfill past traffic.

Reads JSON lines or a combined-format access log (``-`` for stdin, ``.gz`` transparently),
sends each event through the live enrichment pipeline with its original time, and shows a
progress bar. Event ids are derived from the lines, so importing a file twice is harmless.
Bad lines are counted and the first few reported with their line numbers; the exit status
is non-zero if any line was rejected or events could not be delivered.
"""

from __future__ import annotations

import gzip
import io
import sys
import time
from collections import Counter
from pathlib import Path
from typing import TextIO

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from collector.beacon import BadBeacon
from collector.importing import Record, parse_combined, parse_jsonl
from collector.ingest import Rejected, RequestFacts
from collector.runtime import get_ingestor

FUTURE_SKEW_MS = 5 * 60 * 1000
SHOWN_ERRORS = 10


class Command(BaseCommand):
    help = "Import historical events from JSON lines or a combined-format access log."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="path, .gz path, or - for stdin")
        parser.add_argument("--site", required=True)
        parser.add_argument("--format", choices=["jsonl", "combined"], default="jsonl")
        parser.add_argument("--base-url", help="scheme and host for access-log paths, e.g. https://example.com")
        parser.add_argument("--all-requests", action="store_true", help="also record non-page requests")
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args: object, **opts: object) -> None:
        ingestor = get_ingestor()
        site_id = str(opts["site"])
        try:
            site = ingestor.site(site_id)
        except Rejected as exc:
            raise CommandError(exc.detail) from None
        fmt = str(opts["format"])
        base_url = opts["base_url"] or (f"https://{site.domains[0]}" if site.domains else None)
        if fmt == "combined" and not base_url:
            raise CommandError("--base-url is needed: the site has no domain to build URLs from")

        counts: Counter[str] = Counter()
        errors: list[str] = []
        stream, total = _open(str(opts["file"]))
        bar = tqdm(total=total, unit="B", unit_scale=True, disable=bool(opts["no_progress"]), file=sys.stderr)
        for number, line in enumerate(stream, start=1):
            bar.update(len(line.encode()))
            try:
                record = (
                    parse_jsonl(line, site_id)
                    if fmt == "jsonl"
                    else parse_combined(line, site_id, str(base_url), bool(opts["all_requests"]))
                )
                if record is None:
                    counts["skipped"] += 1
                    continue
                counts[self._ingest(ingestor, record, site)] += 1
            except (BadBeacon, Rejected) as exc:
                counts["rejected"] += 1
                if len(errors) < SHOWN_ERRORS:
                    errors.append(f"line {number}: {exc}")
                if isinstance(exc, Rejected) and exc.status == 503:
                    raise CommandError(f"stopped at line {number}: {exc.detail}") from None
        bar.close()
        undelivered = ingestor.sink.flush(60)
        for error in errors:
            self.stderr.write(error)
        self.stdout.write(
            "imported: "
            + ", ".join(f"{k}={counts[k]}" for k in ("queued", "spooled", "ignored", "skipped", "rejected"))
            + f", still queued={undelivered}"
        )
        if counts["rejected"] or undelivered:
            raise CommandError("some lines were not imported (see above)")

    @staticmethod
    def _ingest(ingestor, record: Record, site) -> str:  # noqa: ANN001 - Ingestor, SiteInfo
        facts = RequestFacts(ip=record.ip, user_agent=record.user_agent, dnt=False)
        now = int(time.time() * 1000)
        window = (now, FUTURE_SKEW_MS)  # any past time: this is a backfill
        # any_host: the operator's own files (URLs built from --base-url or as logged), not a
        # stranger's beacon, so the site's domain list is not a gate here.
        return ingestor.ingest(record.beacon, facts, now, ts_window=window, site=site, any_host=True).status


def _open(name: str) -> tuple[TextIO, int | None]:
    if name == "-":
        return io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"), None
    path = Path(name)
    if not path.exists():
        raise CommandError(f"no such file: {path}")
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path), encoding="utf-8", errors="replace"), None
    return path.open(encoding="utf-8", errors="replace"), path.stat().st_size
