"""The default enrichment steps, in the order they must run (:data:`DEFAULT_STEPS`).

Order constraints (each step mutates and returns the :class:`~footfall_capture.enrich.pipeline.Draft`):

1. :func:`~footfall_capture.enrich.visitor.respect_dnt` first: a visitor who asked not to be
   tracked costs no parsing and leaves nothing derived behind.
2. :func:`~footfall_capture.enrich.urls.parse_utm` before
   :func:`~footfall_capture.enrich.urls.canonicalize_url`, which strips the ``utm_*`` parameters
   it reads.
3. :func:`~footfall_capture.enrich.referrer.classify_referrer` after ``canonicalize_url``: a
   referrer from the page's own host (``draft.host``) is internal.
4. :func:`~footfall_capture.enrich.useragent.parse_user_agent` before
   :func:`~footfall_capture.enrich.useragent.detect_bot`, which flags (or drops) the parsed agent.
5. :func:`~footfall_capture.enrich.geo.geolocate` and every other reader of ``draft.ip`` or
   ``draft.user_agent`` before :func:`~footfall_capture.enrich.visitor.assign_visitor_id`, which
   hashes them and then erases both from the draft: it is always **last** (invariant 5, the
   IP is used in memory only).

A site-specific pipeline (sampling, exclusions) inserts its steps after ``respect_dnt`` and
before ``assign_visitor_id``.
"""

from __future__ import annotations

from typing import Final

from footfall_capture.enrich.geo import geolocate
from footfall_capture.enrich.pipeline import Draft, SiteContext, Step, enrich
from footfall_capture.enrich.referrer import classify_referrer
from footfall_capture.enrich.urls import canonicalize_url, parse_utm
from footfall_capture.enrich.useragent import detect_bot, parse_user_agent
from footfall_capture.enrich.visitor import assign_visitor_id, respect_dnt
from footfall_capture.events import MIN_TS_MS

DEFAULT_STEPS: Final[tuple[Step, ...]] = (
    respect_dnt,
    parse_utm,
    canonicalize_url,
    classify_referrer,
    parse_user_agent,
    detect_bot,
    geolocate,
    assign_visitor_id,
)
# Events another product (or a Footfall export) enriched already: their browser, OS, device, bot
# flag, country and visitor id are kept as given, for there is no address or User-Agent to derive
# them from; the page URL and the referrer are read again, under the importing site's own rules.
IMPORTED_STEPS: Final[tuple[Step, ...]] = (parse_utm, canonicalize_url, classify_referrer, assign_visitor_id)


def warm_up() -> None:
    """Run the default steps once on a made-up page view, so this process loads what they
    load lazily now rather than inside its first requests: the GeoIP tables, ua-parser's and
    crawlerdetect's regexes, tldextract's suffix list. The collector's entry points call it
    when they are built (at server start for the middlewares); it is cheap once done. The
    made-up values are not personal data."""
    sample = Draft(
        site_id="warm-up",
        type="pageview",
        ts=MIN_TS_MS,
        received_at=MIN_TS_MS,
        event_id="00000000-0000-7000-8000-000000000000",
        url="https://example.com/warm-up?utm_source=warm-up",
        referrer="https://www.example.org/",
        ip="81.2.69.142",  # a global address, so the GeoIP tables load (documentation ranges skip them)
        user_agent="Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
    )
    enrich(sample, SiteContext(site_id="warm-up", salt=b"warm-up"), DEFAULT_STEPS)
