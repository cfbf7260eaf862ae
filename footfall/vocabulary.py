"""The words both layers and the query API share: dimensions, metrics, intervals, labels.

The speed layer (Redis counters), the batch layer (Spark rollups) and the query layer all
name breakdowns and metrics from here, so an answer means the same whichever layer gave it.
Pure: no Django, no stores.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

# Dimensions counted per page view by both layers: ``page`` (path), ``ref`` (referrer label,
# see :func:`ref_label`), ``refurl`` (full referrer), ``refpage`` (``ref`` +
# :data:`REFPAGE_SEPARATOR` + path: which referrers drive traffic to which pages),
# ``ref_type``, the UTM tags, the user agent's parts and the country.
EVENT_DIMENSIONS: Final = (
    "page",
    "ref",
    "refurl",
    "refpage",
    "ref_type",
    "utm_source",
    "utm_medium",
    "utm_campaign",
    "browser",
    "os",
    "device",
    "country",
)
# A visitor's page views further apart than this are two sessions (the batch layer builds sessions).
SESSION_GAP_MINUTES: Final = 30
# Dimensions of sessions, which only the batch layer builds.
SESSION_DIMENSIONS: Final = ("entry_page",)
# Dimensions counted per custom event (not per page view), ranked by events: the event's name.
CUSTOM_EVENT_DIMENSIONS: Final = ("event",)
# The stores' dimensions of custom events: the API's, plus ``event_prop`` (event, property and
# value, read through the event's properties report rather than as a dimension).
EVENT_COUNT_DIMENSIONS: Final = (*CUSTOM_EVENT_DIMENSIONS, "event_prop")
# The dimensions engaged time is counted by, in the speed layer and the batch layer alike.
ENGAGEMENT_DIMENSIONS: Final = ("page", "ref")
DIMENSIONS: Final = EVENT_DIMENSIONS + SESSION_DIMENSIONS + CUSTOM_EVENT_DIMENSIONS

# The API's dimension names -> the stores' names.
API_DIMENSIONS: Final[Mapping[str, str]] = {
    "pages": "page",
    "entry_pages": "entry_page",
    "referrers": "ref",
    "referrer_urls": "refurl",
    "ref_types": "ref_type",
    "utm_sources": "utm_source",
    "utm_mediums": "utm_medium",
    "utm_campaigns": "utm_campaign",
    "browsers": "browser",
    "os": "os",
    "devices": "device",
    "countries": "country",
    "events": "event",
}
# Dimensions a query may filter by: those both layers count.
FILTER_DIMENSIONS: Final = tuple(name for name, dim in API_DIMENSIONS.items() if dim in EVENT_DIMENSIONS)

# Dimensions a goal's converting visitors are attributed to (the breakdown's ``goal`` filter):
# values of the visitor's first session of the day. The batch layer stores per day rows of
# dimension GOAL_SOURCE_PREFIX + dim (value: goal id + PROP_SEPARATOR + value; converting
# visitors and their conversions) and GOAL_BASE_PREFIX + dim (value: the value; every visitor
# attributed to it), so a conversion rate has one definition above and below the line.
GOAL_SOURCE_DIMENSIONS: Final = (
    "ref",
    "ref_type",
    "utm_source",
    "utm_medium",
    "utm_campaign",
    "entry_page",
    "country",
    "browser",
    "os",
    "device",
)
GOAL_SOURCE_PREFIX: Final = "goal_src:"
GOAL_BASE_PREFIX: Final = "goal_base:"
# Revenue of goals (footfall.revenue), per currency: dimension GOAL_REVENUE (value: goal id +
# PROP_SEPARATOR + currency) and, by where the converting visitors came from, dimension
# GOAL_REVENUE_SOURCE_PREFIX + dim (value: goal id + PROP_SEPARATOR + currency + PROP_SEPARATOR + value).
GOAL_REVENUE: Final = "goal_revenue"
GOAL_REVENUE_SOURCE_PREFIX: Final = "goal_revsrc:"
# The API's dimension names a breakdown may be filtered by goal on.
GOAL_FILTER_DIMENSIONS: Final = tuple(name for name, dim in API_DIMENSIONS.items() if dim in GOAL_SOURCE_DIMENSIONS)

# Metrics the API answers; the speed layer counts the first two plus events and bot events.
METRICS: Final = ("pageviews", "visitors", "sessions", "bounce_rate", "visit_duration")
REALTIME_METRICS: Final = ("pageviews", "visitors", "events", "bot_events")
# Columns a breakdown row may have besides METRICS: custom events, and engagement (time on
# page and scroll depth of pages, engaged time of pages and referrers).
BREAKDOWN_METRICS: Final = (*METRICS, "events", "time_on_page", "scroll_depth", "engaged_time")
# The columns of a breakdown filtered by goal: converting visitors, their conversions, and
# converting visitors / visitors attributed to the value alike.
GOAL_BREAKDOWN_METRICS: Final = ("visitors", "conversions", "conversion_rate")

# Bucket sizes of a time series, and the minutes of those the speed layer keeps.
INTERVALS: Final = ("minute", "hour", "day")
INTERVAL_MINUTES: Final[Mapping[str, int]] = {"minute": 1, "hour": 60}

REFPAGE_SEPARATOR: Final = "\x1f"  # joins referrer label and path; no URL or label holds it
REF_DIRECT: Final = "(direct)"  # no referrer at all
REF_UNKNOWN: Final = "(unknown)"  # a referrer that names no host or app (not an http(s) URL)
# The speed layer's label for the values of a dimension past its cap in one bucket (the
# values first seen once the bucket held its share; see realtime.keys). No path, URL or
# label above is spelled so.
VALUE_OTHER: Final = "(other)"
# How many values per dimension a bucket of the speed layer keeps (realtime.keys, Caps).
MINUTE_VALUES: Final = 1000
HOUR_VALUES: Final = 10_000


# Event types that are not custom events: the host's page views and requests, and the
# tracker's engagement reports (engaged time and scroll depth of a page view, in ``props``).
ENGAGEMENT: Final = "engagement"
NON_CUSTOM_TYPES: Final = ("pageview", "request", ENGAGEMENT)
# An engagement report's properties: engaged milliseconds since the page view's previous
# report, the deepest share of the page scrolled so far (0 to 100), and the page view's
# event_id. Engaged time above MAX_ENGAGED_MS in one report is counted as MAX_ENGAGED_MS.
ENGAGED_MS_PROP: Final = "engaged_ms"
SCROLL_DEPTH_PROP: Final = "scroll_depth"
PAGEVIEW_ID_PROP: Final = "pageview_id"
MAX_ENGAGED_MS: Final = 30 * 60_000
# Values kept per (event, property) and day by the batch layer; the rest count as (other).
EVENT_PROP_VALUES: Final = 100
# Joins event name, property name and value in an ``event_prop`` breakdown value.
PROP_SEPARATOR: Final = "\x1f"


def ref_label(ref_domain: str | None, referrer: str | None) -> str:
    """The referrer label of an event: ``ref_domain``; else :data:`REF_UNKNOWN` when a
    referrer was sent, :data:`REF_DIRECT` when none was."""
    if ref_domain:
        return ref_domain
    return REF_UNKNOWN if referrer and referrer.strip() else REF_DIRECT


def refpage(ref: str, path: str | None) -> str | None:
    """The ``refpage`` value of a page view (None without a path)."""
    return f"{ref}{REFPAGE_SEPARATOR}{path}" if path else None


class QueryError(ValueError):
    """A query argument outside the fixed vocabulary; names the parameter (the API's 400)."""

    def __init__(self, parameter: str, message: str) -> None:
        super().__init__(f"{parameter}: {message}")
        self.parameter = parameter
