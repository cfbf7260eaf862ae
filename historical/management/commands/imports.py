"""``manage.py imports``: bring in, list and delete another product's history (imported days).

    manage.py imports add --site S export.zip     # Plausible's CSV export (a zip of daily tables)
    manage.py imports list [--site S]
    manage.py imports delete IMPORT_ID

Imported days are kept apart from Footfall's own rollups (:mod:`historical.imported`): every
row of the file is read and checked before anything is stored, so a bad file imports nothing;
the error names the file, line and column. An import overlapping the days of one already there
is refused; delete that one first.
"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser
from pymongo.database import Database

from footfall.config import footfall_config
from footfall.file_problem import FileProblem
from footfall.models import Site
from historical import imported
from historical.plausible_export import read_export
from historical.store import connect


class Command(BaseCommand):
    help = "Import another product's history (Plausible's CSV export), list imports, delete one."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        add = actions.add_parser("add", help="import a Plausible CSV export (zip) into a site")
        add.add_argument("--site", required=True, help="the site the history belongs to")
        add.add_argument("--format", choices=["plausible"], default="plausible", help="the export's format")
        add.add_argument("file", type=Path)
        shown = actions.add_parser("list", help="the imports, oldest first")
        shown.add_argument("--site", default=None)
        gone = actions.add_parser("delete", help="remove an import and every figure it brought")
        gone.add_argument("import_id")

    def handle(self, *args: object, **opts: object) -> None:
        cfg = footfall_config()
        client, db = connect(cfg.mongo_url, cfg.mongo_db)
        try:
            action = opts["action"]
            if action == "add":
                self._add(db, str(opts["site"]), Path(str(opts["file"])))
            elif action == "list":
                self._list(db, opts["site"] and str(opts["site"]))
            else:
                try:
                    removed = imported.Imports(db).delete(str(opts["import_id"]))
                except KeyError:
                    raise CommandError(f"no import {opts['import_id']} (manage.py imports list shows them)") from None
                self.stdout.write(f"deleted import {opts['import_id']}: {removed:,} documents")
        finally:
            client.close()

    def _add(self, db: Database, site_id: str, path: Path) -> None:
        if not Site.objects.filter(site_id=site_id).exists():
            raise CommandError(f"no site {site_id!r}: create it first (manage.py create_site)")
        try:
            export = read_export(path)
            summary = imported.save(db, site_id, export)
        except (FileProblem, imported.ImportRefused) as exc:
            raise CommandError(f"{exc}; nothing was imported") from None
        rows = ", ".join(f"{table} {count:,}" for table, count in sorted(summary.rows.items()))
        self.stdout.write(
            f"imported {summary.import_id} into {site_id}: {summary.days} days, {summary.first} to {summary.last} "
            f"({rows} rows)"
        )

    def _list(self, db: Database, site_id: str | None) -> None:
        found = imported.Imports(db).listed(site_id)
        if not found:
            self.stdout.write("no imports")
        for one in found:
            self.stdout.write(
                f"{one.import_id}  {one.site_id}  {one.source}  {one.first} to {one.last}  {one.days} days  "
                f"{sum(one.rows.values()):,} rows  {one.state}  {one.created:%Y-%m-%d %H:%M}  {', '.join(one.files)}"
            )
