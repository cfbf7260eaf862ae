"""A site's installation check: the snippet to copy, the first and last events the collector
took for it (with their source and page host), and its last refused events with their reasons.

The dashboard's site page (dashboard/install.py) and ``manage.py check_site`` show the same.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from functools import cache

from collector.sightings import Refusal, Sighting, Sightings, SiteSightings, Unreadable
from collector.snippets import middleware_settings, script_tag
from collector.tracker_file import TrackerNotBuilt, built_tracker
from footfall.config import footfall_config

# What to do about each refusal reason, in a sentence (reasons the collector gives: collector/views.py).
ADVICE = {
    "page_host_not_allowed": "the page is on a host the site does not list: add it (create_site --domain) "
    "or send from a listed one",
    "origin_not_allowed": "the page's origin is not one of the site's domains: add it (create_site --domain)",
    "unknown_site": "no site has this id: check data-site / FOOTFALL_SITE_ID",
    "bot": "the visitor was a crawler and the site drops bots",
    "do_not_track": "the visitor's browser asks not to be tracked and the site honours it",
    "rate_limited": "one client sent too many events at once",
    "sampled_out": "outside the site's sampling rate",
    "excluded": "an excluded path or host",
}
NO_EVENT_YET = (
    "No event yet. Add the snippet to your pages (or the middleware to your Django settings), open a page, "
    "and this shows the event within seconds. If it still shows nothing, look at the refused events below."
)


@dataclass(frozen=True)
class Installation:
    site_id: str
    script_tag: str
    middleware_settings: str
    tracker_built: bool
    sightings: SiteSightings | None  # None: the record could not be read (``unreadable`` says why)
    unreadable: str | None = None

    @property
    def events(self) -> tuple[Sighting, Sighting] | None:
        """The first and the last event taken for the site; None while there is none (or no record)."""
        seen = self.sightings
        if seen is None or seen.first is None or seen.last is None:
            return None
        return seen.first, seen.last

    @property
    def receiving(self) -> bool:
        return self.events is not None


@cache
def _sightings() -> Sightings:
    cfg = footfall_config()
    return Sightings.at(cfg.redis_url, timeout_s=cfg.redis_timeout_ms / 1000)


def installation(site_id: str, base_url: str) -> Installation:
    """The check of ``site_id``, with snippets that point at ``base_url`` (the server as visitors reach it)."""
    cfg = footfall_config()
    try:
        integrity: str | None = built_tracker().integrity
    except TrackerNotBuilt:
        integrity = None
    tag = script_tag(base_url, site_id, integrity, cfg.tracker_path, cfg.collect_path)
    settings = middleware_settings(base_url, site_id)
    try:
        seen, problem = _sightings().read(site_id), None
    except Unreadable as exc:
        seen, problem = None, str(exc)
    return Installation(site_id, tag, settings, integrity is not None, seen, problem)


def when(at_ms: int, now_ms: int) -> str:
    """``2026-11-29 01:02:03 UTC (4 min ago)``."""
    at = dt.datetime.fromtimestamp(at_ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    ago = max(0, now_ms - at_ms) // 1000
    span = f"{ago} s" if ago < 120 else f"{ago // 60} min" if ago < 7200 else f"{ago // 3600} h"
    return f"{at} ({span} ago)"


def sighting_line(label: str, seen: Sighting, now_ms: int) -> str:
    return f"{label}: {when(seen.at_ms, now_ms)} from the {seen.source}, page host {seen.host or '-'}"


def refusal_line(refusal: Refusal, now_ms: int) -> str:
    advice = ADVICE.get(refusal.reason)
    detail = f" ({refusal.detail})" if refusal.detail else ""
    return (f"{when(refusal.at_ms, now_ms)}  {refusal.reason} from the {refusal.source}, page host "
            f"{refusal.host or '-'}{detail}" + (f": {advice}" if advice else ""))  # fmt: skip


def report(check: Installation, now_ms: int) -> list[str]:
    """The check as lines of text (``manage.py check_site``)."""
    lines = [f"Site {check.site_id}"]
    if check.unreadable:
        lines.append(f"Events: unknown, {check.unreadable}")
    elif check.events is None:
        lines.append(NO_EVENT_YET)
    else:
        first, last = check.events
        lines.append(sighting_line("First event", first, now_ms))
        lines.append(sighting_line("Last event", last, now_ms))
    refused = check.sightings.refused if check.sightings else []
    lines.append("Refused lately: none" if not refused else "Refused lately (newest first):")
    lines += [f"  {refusal_line(r, now_ms)}" for r in refused]
    lines += ["", "The tracker, in every page's <head>:", f"  {check.script_tag}"]
    if not check.tracker_built:
        lines.append("  (the tracker is not built on this server: python -m deploy.build_tracker; no integrity hash)")
    else:
        lines.append("  (integrity pins this build of the tracker: after upgrading Footfall, copy the tag again)")
    lines += ["", "Or, for a Django site, the middleware:", *(f"  {x}" for x in check.middleware_settings.splitlines())]
    return lines
