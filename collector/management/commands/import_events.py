"""``manage.py import_events FILE --site SITE [--format jsonl|combined|umami|goatcounter|footfall]``:
backfill past traffic.

``jsonl`` and ``combined``: JSON lines of beacons or a combined-format access log (``-`` for
stdin, ``.gz`` transparently), each event through the live enrichment pipeline with its original
time. Bad lines are counted and the first few reported with their line numbers; the rest import.

``umami`` (its ``website_event`` table as CSV), ``goatcounter`` (its CSV export) and
``footfall`` (a Footfall export: ``.parquet``, ``.csv`` or ``.jsonl``): every row is checked
first, and one bad row (a missing column, a malformed date, another site's file) stops the
import before anything is sent, naming the file, line and column. What the source worked out
(browser, country, visitor) is kept (collector/imported_formats.py).

Event ids are the source's or derived from the lines, so importing a file twice counts it once.
The exit status is non-zero if anything was rejected or could not be delivered. ``manage.py
rollup`` for the imported days then settles them.
"""

from __future__ import annotations

import gzip
import io
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from collector.beacon import BadBeacon
from collector.import_files import FORMATS as FILE_FORMATS
from collector.import_files import records
from collector.importing import Record, parse_combined, parse_jsonl
from collector.ingest import Rejected, RequestFacts
from collector.runtime import get_ingestor
from footfall.file_problem import FileProblem
from footfall_capture.accept import NullSink, Sink

FUTURE_SKEW_MS = 5 * 60 * 1000
SHOWN_ERRORS = 10


class Command(BaseCommand):
    help = "Import historical events from JSON lines or a combined-format access log."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="path, .gz path, or - for stdin")
        parser.add_argument("--site", required=True)
        parser.add_argument("--format", choices=["jsonl", "combined", *FILE_FORMATS], default="jsonl")
        parser.add_argument(
            "--base-url", help="scheme and host for access-log and GoatCounter paths, e.g. https://example.com"
        )
        parser.add_argument("--from-site", help="the site (Umami: website id) of the file's rows to import")
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
        if fmt in FILE_FORMATS:
            self._import_file(ingestor, site, Path(str(opts["file"])), fmt, base_url, opts)
            return

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

    def _import_file(self, ingestor, site, path: Path, fmt: str, base_url: str | None, opts: dict) -> None:  # noqa: ANN001
        """All of the file or none of it: every row is checked before the first is sent."""
        from_site = opts["from_site"] or None

        def read() -> Iterator[tuple[int, Record]]:
            return records(path, fmt, site.site_id, base_url, from_site)

        rows = 0
        try:
            for line, record in read():  # parsed, enriched and validated, sent nowhere
                try:
                    self._ingest(ingestor, record, site, NullSink())
                except (BadBeacon, Rejected) as exc:
                    raise FileProblem(path, line, None, exc.detail or exc.reason) from None
                rows += 1
        except FileProblem as exc:
            raise CommandError(f"nothing imported: {exc}") from None
        counts: Counter[str] = Counter()
        bar = tqdm(total=rows, unit="event", disable=bool(opts["no_progress"]), file=sys.stderr)
        for line, record in read():
            try:
                counts[self._ingest(ingestor, record, site)] += 1
            except (BadBeacon, Rejected) as exc:  # each row passed the check: this is the sink's outage
                sent = sum(counts.values())
                raise CommandError(f"stopped at {path.name}:{line} after {sent} events: {exc}") from None
            bar.update()
        bar.close()
        undelivered = ingestor.sink.flush(60)
        self.stdout.write(
            f"imported {path.name} ({fmt}): "
            + ", ".join(f"{k}={counts[k]}" for k in ("queued", "spooled", "ignored"))
            + f", still queued={undelivered}"
        )
        if undelivered:
            raise CommandError("some events could not be delivered (see above)")

    @staticmethod
    def _ingest(ingestor, record: Record, site, sink: Sink | None = None) -> str:  # noqa: ANN001 - Ingestor, SiteInfo
        facts = RequestFacts(ip=record.ip, user_agent=record.user_agent, dnt=False)
        now = int(time.time() * 1000)
        window = (now, FUTURE_SKEW_MS)  # any past time: this is a backfill
        # any_host: the operator's own files (URLs built from --base-url or as logged), not a
        # stranger's beacon, so the site's domain list is not a gate here.
        result = ingestor.ingest(
            record.beacon, facts, now, ts_window=window, site=site, any_host=True, given=record.given, sink=sink
        )
        return result.status


def _open(name: str) -> tuple[TextIO, int | None]:
    if name == "-":
        return io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"), None
    path = Path(name)
    if not path.exists():
        raise CommandError(f"no such file: {path}")
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path), encoding="utf-8", errors="replace"), None
    return path.open(encoding="utf-8", errors="replace"), path.stat().st_size
