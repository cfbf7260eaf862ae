"""HTTP views of the REST API: parse parameters, call the query service, render.

Thin on purpose: validation lives in :mod:`query.params`, the lambda merge in
:mod:`query.service` (shared in-process with the dashboard), auth in :mod:`api.auth`.
"""

from __future__ import annotations

import datetime as dt

from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.authentication import SessionAuthentication
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api import serializers as s
from api.auth import ApiKeyAuthentication, ApiKeyRateThrottle, SiteReadAccess
from api.renderers import CsvRenderer
from footfall import vocabulary as v
from footfall.goals import EVENT_NAME
from footfall.models import ApiKey, Goal
from footfall.vocabulary import QueryError
from query import params as p
from query.runtime import get_conversions, get_health_checks, get_service
from query.service import QuerySite


class HealthView(APIView):
    """``GET /api/v1/health``: 200 ``{"status": "ok"}`` when Kafka, Redis and Mongo answer, else
    503 ``{"status": "degraded"}``, from checks at most a few seconds old. Which store failed, and
    why, only for a read key (any site's) or a signed-in staff user: a driver's error text names
    hosts and versions, which anonymous callers (load balancers) do not need."""

    authentication_classes = [ApiKeyAuthentication, SessionAuthentication]
    permission_classes: list = []

    @extend_schema(exclude=True)
    def get(self, request: Request) -> Response:
        problems = get_health_checks().status()
        healthy = all(err is None for err in problems.values())
        body: dict[str, object] = {"status": "ok" if healthy else "degraded"}
        if _may_see_health_details(request):
            body["services"] = {name: ("ok" if err is None else err) for name, err in problems.items()}
        return Response(body, status=200 if healthy else 503)


def _may_see_health_details(request: Request) -> bool:
    if isinstance(request.auth, ApiKey):
        return "read" in request.auth.scopes
    user = request.user
    return bool(user and user.is_authenticated and (user.is_staff or user.is_superuser))


# -- OpenAPI parameter declarations (shared) ---------------------------------------------

SITE = OpenApiParameter("site_id", OpenApiTypes.STR, OpenApiParameter.PATH, description="the site of the API key")
FROM = OpenApiParameter(
    "from", OpenApiTypes.STR, description="start (inclusive): YYYY-MM-DD (midnight in tz) or an ISO 8601 date-time"
)
TO = OpenApiParameter("to", OpenApiTypes.STR, description="end (exclusive), same forms as from; default now")
TZ = OpenApiParameter("tz", OpenApiTypes.STR, description="IANA time zone of day boundaries; default the site's")
FORMAT = OpenApiParameter("format", OpenApiTypes.STR, enum=["json", "csv"], description="csv: a CSV table")
LIMIT = OpenApiParameter("limit", OpenApiTypes.INT, description=f"rows per page, 1-{p.MAX_LIMIT} (default 10)")
PAGE = OpenApiParameter("page", OpenApiTypes.INT, description="page number from 1 (default 1)")
ERRORS = {
    400: OpenApiResponse(s.ErrorSerializer, description="a parameter is invalid; `error.parameter` names it"),
    401: OpenApiResponse(s.ErrorSerializer, description="missing, unknown or revoked API key"),
    403: OpenApiResponse(s.ErrorSerializer, description="the key lacks the read scope"),
    404: OpenApiResponse(s.ErrorSerializer, description="no such site for this key"),
    429: OpenApiResponse(s.ErrorSerializer, description="rate limit of the key; see Retry-After"),
    503: OpenApiResponse(s.ErrorSerializer, description="a store is down or slow; try again after Retry-After"),
}


class SiteView(APIView):
    """Base of every per-site endpoint: Bearer key of that site with ``read`` scope, rate-limited."""

    authentication_classes = [ApiKeyAuthentication]
    permission_classes = [SiteReadAccess]
    throttle_classes = [ApiKeyRateThrottle]
    renderer_classes = [JSONRenderer]

    def site(self, request: Request) -> QuerySite:
        key: ApiKey = request.auth
        return QuerySite.of(key.site)

    @staticmethod
    def params(request: Request) -> dict[str, str]:
        # Only the last value of a repeated parameter counts, as with Django's QueryDict.get.
        return {k: request.query_params.get(k, "") for k in request.query_params}

    @staticmethod
    def now() -> dt.datetime:
        return get_service().now()


class TimeseriesView(SiteView):
    renderer_classes = [JSONRenderer, CsvRenderer]

    @extend_schema(
        summary="A metric over time",
        parameters=[
            SITE,
            OpenApiParameter("metric", OpenApiTypes.STR, enum=list(v.METRICS), description="default pageviews"),
            OpenApiParameter("interval", OpenApiTypes.STR, enum=list(v.INTERVALS), description="default day"),
            FROM,
            TO,
            TZ,
            OpenApiParameter(
                "filters",
                OpenApiTypes.STR,
                description=f"one filter <dimension>==<value>, dimension in {', '.join(v.FILTER_DIMENSIONS)}",
            ),
            FORMAT,
        ],
        responses={200: s.TimeseriesSerializer, **ERRORS},
    )
    def get(self, request: Request, site_id: str) -> Response:
        q = self.params(request)
        metric = p.choice(q, "metric", v.METRICS, "pageviews")
        interval = p.choice(q, "interval", v.INTERVALS, "day")
        site = self.site(request)
        rng = p.parse_range(q, site.tz, self.now(), p.DEFAULT_SPAN[interval], p.MAX_SPAN[interval])
        data = get_service().timeseries(site, metric, interval, rng, p.parse_filters(q.get("filters")))
        return Response(data)


BREAKDOWN_PARAMS = [
    FROM,
    TO,
    TZ,
    LIMIT,
    PAGE,
    OpenApiParameter(
        "metrics",
        OpenApiTypes.STR,
        description=f"comma-separated subset of {', '.join(v.BREAKDOWN_METRICS)} (default pageviews,visitors; "
        "events,visitors for events); sessions, bounce_rate and visit_duration exist for entry_pages only, "
        "events for events, time_on_page (engaged seconds per page view) and scroll_depth (mean deepest "
        "scroll, percent, settled days only) for pages, engaged_time (seconds) for pages and referrers",
    ),
    FORMAT,
]


class _BreakdownBase(SiteView):
    """The three breakdown endpoints: a dimension's top values, optionally filtered."""

    renderer_classes = [JSONRenderer, CsvRenderer]

    def breakdown(self, request: Request, dimension: str, **filters: str) -> Response:
        """``dimension``'s top values over the request's ``from``/``to`` (default: the last
        30 days), with its ``limit``, ``page`` and ``metrics``, filtered by ``filters`` (a
        referrer domain or a page path, validated by the caller)."""
        q = self.params(request)
        limit = p.bounded_int(q, "limit", 10, 1, p.MAX_LIMIT)
        page = p.bounded_int(q, "page", 1, 1, 100_000)
        default = ("events", "visitors") if dimension in v.CUSTOM_EVENT_DIMENSIONS else ("pageviews", "visitors")
        metrics = p.parse_metrics(q.get("metrics"), v.BREAKDOWN_METRICS, default)
        site = self.site(request)
        rng = p.parse_range(q, site.tz, self.now(), p.DEFAULT_SPAN["day"], p.MAX_RANGE)
        return Response(get_service().breakdown(site, dimension, rng, limit, page, metrics, **filters))


class BreakdownView(_BreakdownBase):
    @extend_schema(
        summary="Top values of a dimension",
        description=(
            "Settled days are exact. Within the realtime window, a minute keeps the page views of its "
            f"{v.MINUTE_VALUES:,} busiest values per dimension (an hour: {v.HOUR_VALUES:,}); "
            f"further values of that bucket are counted under the value {v.VALUE_OTHER}, until the "
            "nightly rollup settles the day.\n\n"
            "With `goal`: where that goal's converting visitors came from, ranked by converting visitors. "
            "Each visitor-day counts under the values of its first session of the day; a row has `visitors` "
            "(converting), `conversions` and `conversion_rate` (converting / all visitors whose first session "
            "had the value). Settled days only: the part of the range the nightly rollup has not settled is "
            f"reported in `sources.missing`. Dimensions: {', '.join(v.GOAL_FILTER_DIMENSIONS)}."
        ),
        parameters=[
            SITE,
            OpenApiParameter("dimension", OpenApiTypes.STR, OpenApiParameter.PATH, enum=list(v.API_DIMENSIONS)),
            *BREAKDOWN_PARAMS,
            OpenApiParameter(
                "goal",
                OpenApiTypes.INT,
                description="a goal id of the site: where its converting visitors came from (not with metrics)",
            ),
        ],
        responses={
            200: s.BreakdownSerializer,
            **ERRORS,
            404: OpenApiResponse(s.ErrorSerializer, description="no such site for this key, or no such goal"),
        },
    )
    def get(self, request: Request, site_id: str, dimension: str) -> Response:
        store_dimension = p.dimension(dimension)
        q = self.params(request)
        if "goal" not in q:
            return self.breakdown(request, store_dimension)
        if store_dimension not in v.GOAL_SOURCE_DIMENSIONS:
            raise QueryError("dimension", f"with goal, must be one of {', '.join(v.GOAL_FILTER_DIMENSIONS)}")
        if q.get("metrics"):
            raise QueryError("metrics", f"not with goal: its columns are {', '.join(v.GOAL_BREAKDOWN_METRICS)}")
        if not q["goal"]:
            raise QueryError("goal", "must be a goal id of the site (GET /api/v1/sites/<site_id>/goals lists them)")
        goal_id = p.bounded_int(q, "goal", 0, 1, 999_999_999)
        limit = p.bounded_int(q, "limit", 10, 1, p.MAX_LIMIT)
        page = p.bounded_int(q, "page", 1, 1, 100_000)
        site = self.site(request)
        goal = Goal.objects.filter(site_id=site.site_id, pk=goal_id).first()
        if goal is None:
            raise Http404("no such goal")
        rng = p.parse_range(q, site.tz, self.now(), p.DEFAULT_SPAN["day"], p.MAX_RANGE)
        return Response(get_conversions().goal_breakdown(site, store_dimension, goal.spec(), rng, limit, page))


class ReferrerPagesView(_BreakdownBase):
    @extend_schema(
        summary="Pages a referrer drives traffic to",
        parameters=[
            SITE,
            OpenApiParameter(
                "ref_domain",
                OpenApiTypes.STR,
                OpenApiParameter.PATH,
                description="referrer domain, or (direct) for visits without a referrer",
            ),
            *BREAKDOWN_PARAMS,
        ],
        responses={200: s.BreakdownSerializer, **ERRORS},
    )
    def get(self, request: Request, site_id: str, ref_domain: str) -> Response:
        return self.breakdown(request, "refpage", ref=p.text_value(ref_domain, "ref_domain"))


class PageReferrersView(_BreakdownBase):
    @extend_schema(
        summary="Referrers that drive traffic to a page",
        parameters=[
            SITE,
            OpenApiParameter(
                "page_path",
                OpenApiTypes.STR,
                OpenApiParameter.PATH,
                description="the page's path, with or without its leading slash (URL-encode it)",
            ),
            *BREAKDOWN_PARAMS,
        ],
        responses={200: s.BreakdownSerializer, **ERRORS},
    )
    def get(self, request: Request, site_id: str, page_path: str) -> Response:
        path = p.text_value(page_path if page_path.startswith("/") else f"/{page_path}", "page_path")
        return self.breakdown(request, "refpage", path=path)


class EventPropertiesView(SiteView):
    renderer_classes = [JSONRenderer, CsvRenderer]

    @extend_schema(
        summary="Values of one property of a custom event",
        description=(
            "Ranked by events; `visitors` are distinct per day, summed over the days. Each settled day keeps "
            f"the {v.EVENT_PROP_VALUES} values with most events per property and counts the rest as "
            f"{v.VALUE_OTHER}. Values are compared as text: true, 3, pro."
        ),
        parameters=[
            SITE,
            OpenApiParameter("event", OpenApiTypes.STR, OpenApiParameter.PATH, description="the event name"),
            OpenApiParameter("prop", OpenApiTypes.STR, OpenApiParameter.PATH, description="the property name"),
            FROM,
            TO,
            TZ,
            LIMIT,
            PAGE,
            FORMAT,
        ],
        responses={200: s.EventPropertiesSerializer, **ERRORS},
    )
    def get(self, request: Request, site_id: str, event: str, prop: str) -> Response:
        q = self.params(request)
        if not EVENT_NAME.match(event):
            raise QueryError("event", "must be an event name: letters, digits and _.:- (at most 64)")
        if not 0 < len(prop) <= 64 or "\x00" in prop or v.PROP_SEPARATOR in prop:
            raise QueryError("prop", "must be a property name of 1 to 64 characters")
        limit = p.bounded_int(q, "limit", 10, 1, p.MAX_LIMIT)
        page = p.bounded_int(q, "page", 1, 1, 100_000)
        site = self.site(request)
        rng = p.parse_range(q, site.tz, self.now(), p.DEFAULT_SPAN["day"], p.MAX_RANGE)
        return Response(get_conversions().event_properties(site, event, prop, rng, limit, page))


class RealtimeView(SiteView):
    @extend_schema(
        summary="Right now: concurrent visitors, page views per minute, top and rising pages and referrers",
        parameters=[
            SITE,
            OpenApiParameter("minutes", OpenApiTypes.INT, description="window, 1-180 minutes (default 30)"),
            OpenApiParameter("limit", OpenApiTypes.INT, description="rows per list, 1-100 (default 10)"),
        ],
        responses={200: s.RealtimeSerializer, **ERRORS},
    )
    def get(self, request: Request, site_id: str) -> Response:
        q = self.params(request)
        minutes = p.bounded_int(q, "minutes", 30, 1, 180)
        limit = p.bounded_int(q, "limit", 10, 1, 100)
        return Response(get_service().realtime(self.site(request), minutes, limit))


class AggregateView(SiteView):
    @extend_schema(
        summary="Totals of a period, optionally against the period before",
        parameters=[
            SITE,
            FROM,
            TO,
            TZ,
            OpenApiParameter("compare", OpenApiTypes.STR, enum=["previous_period", "none"], description="default none"),
        ],
        responses={200: s.AggregateSerializer, **ERRORS},
    )
    def get(self, request: Request, site_id: str) -> Response:
        q = self.params(request)
        compare = p.choice(q, "compare", ("previous_period", "none"), "none") == "previous_period"
        site = self.site(request)
        rng = p.parse_range(q, site.tz, self.now(), p.DEFAULT_SPAN["day"], p.MAX_RANGE)
        return Response(get_service().aggregate(site, rng, compare))


__all__ = [
    "AggregateView",
    "BreakdownView",
    "EventPropertiesView",
    "HealthView",
    "PageReferrersView",
    "QueryError",
    "RealtimeView",
    "ReferrerPagesView",
    "TimeseriesView",
]
