"""A site's raw events over a range, read from the archive: the batch layer's source of truth,
so an export holds exactly the events the rollup counts (archive/export.py)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

from archive.export_formats import CONTENT_TYPES, FORMATS
from footfall.config import footfall_config
from query.params import Range

__all__ = ["CONTENT_TYPES", "DEFAULT_SPAN", "FORMATS", "MAX_SPAN", "file_name", "pieces"]
DEFAULT_SPAN = dt.timedelta(days=30)
MAX_SPAN = dt.timedelta(days=3660)  # ten years a request: the export streams, whatever the span


def _ms(moment: dt.datetime) -> int:
    return int(moment.timestamp() * 1000)


def pieces(site_id: str, rng: Range, fmt: str) -> Iterator[bytes]:
    """The export of ``site_id``'s events with ``rng.start <= ts < rng.end`` in ``fmt``, a piece at a time."""
    # Imported here: pyarrow loads in the web process that runs an export, not in every one.
    from archive.export import export
    from archive.store import Archive

    archive = Archive.from_config(footfall_config())
    return export(archive, site_id, _ms(rng.start), _ms(rng.end), fmt)


def file_name(site_id: str, rng: Range, fmt: str) -> str:
    """``footfall-<site>-<from>-<to>.<fmt>``, the range's ends in its zone (minutes when not midnight)."""

    def end(moment: dt.datetime) -> str:
        return f"{moment:%Y-%m-%d}" if moment.time() == dt.time() else f"{moment:%Y-%m-%dT%H%M}"

    return f"footfall-{site_id}-{end(rng.start)}-{end(rng.end)}.{fmt}"
