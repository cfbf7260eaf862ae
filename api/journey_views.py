"""``GET sites/<site>/journeys``: the steps visitors took after a start page or event, or before an
end point, along a selected path (:mod:`query.journeys`; what the figures mean: docs/reports.md)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from api.serializers import RangedSerializer, SourcesSerializer
from api.views import ERRORS, FROM, SITE, TO, TZ, SiteView
from footfall.journeys import DIRECTIONS, ENTRANCE, EXIT, MAX_STEPS, MORE
from query import params as p
from query.journeys import MAX_OPTIONS, parse
from query.runtime import get_journeys

# Journeys read every kept session of the range's days: a quarter of a year at most.
MAX_SPAN = p.MAX_SPAN["hour"]


class JourneyOptionSerializer(serializers.Serializer):
    label = serializers.CharField(help_text=f"a page path, an event name, {EXIT}, {ENTRANCE} or {MORE}")
    visitors = serializers.IntegerField(help_text="distinct per day, summed over the days")
    sessions = serializers.IntegerField()
    share = serializers.FloatField(allow_null=True, help_text="visitors / the start's visitors")


class JourneyStepSerializer(serializers.Serializer):
    step = serializers.IntegerField(help_text="1 = right after (or before) the start")
    selected = serializers.CharField(allow_null=True, help_text="the path's step here; null on the last column")
    visitors = serializers.IntegerField(allow_null=True, help_text="visitors who reached the selected step")
    share = serializers.FloatField(allow_null=True, help_text="of the start's visitors, those who reached it")
    options = JourneyOptionSerializer(many=True, help_text="what was taken here after the selected steps before")
    total = serializers.IntegerField(help_text="options in all, before the limit")


class JourneysSerializer(RangedSerializer):
    site_id = serializers.CharField()
    start = serializers.CharField()
    direction = serializers.ChoiceField(choices=list(DIRECTIONS))
    path = serializers.ListField(child=serializers.CharField())
    visitors = serializers.IntegerField(help_text="visitors whose session reached the start")
    sessions = serializers.IntegerField()
    steps = JourneyStepSerializer(many=True)
    sources = SourcesSerializer()


class JourneysView(SiteView):
    @extend_schema(
        summary="Journeys: the steps taken after a page or event, or before it",
        description=(
            "From the first time each session reached `start`, the steps it took next (`direction=next`) or "
            "before (`previous`) along the selected `path`: step 1 lists every page and custom event taken "
            f"first, with {EXIT} (or {ENTRANCE}), step 2 what those who took the path's first step took next, "
            f"and so on, up to {MAX_STEPS} steps. Reloads and repeated events are one step; sessions split "
            "after 30 minutes without a step. Visitors are distinct per day and summed over the days. "
            "Settled whole days only (nightly rollup): the rest of the range is reported in `sources.missing`. "
            "A step whose name holds a comma cannot be selected in `path`."
        ),
        parameters=[
            SITE,
            OpenApiParameter("start", OpenApiTypes.STR, required=True, description="a page path (/…) or event name"),
            OpenApiParameter(
                "path", OpenApiTypes.STR, description=f"selected steps, comma-separated (at most {MAX_STEPS - 1})"
            ),
            OpenApiParameter("direction", OpenApiTypes.STR, enum=list(DIRECTIONS), description="default next"),
            FROM,
            TO,
            TZ,
            OpenApiParameter("limit", OpenApiTypes.INT, description=f"options per step, 1-{MAX_OPTIONS} (default 20)"),
        ],
        responses={200: JourneysSerializer, **ERRORS},
    )
    def get(self, request: Request, site_id: str) -> Response:
        q = self.params(request)
        site = self.site(request)  # a key of another site learns nothing, not even which parameter is wrong
        question = parse(q.get("start"), q.get("path"), q.get("direction"))
        limit = p.bounded_int(q, "limit", 20, 1, MAX_OPTIONS)
        rng = p.parse_range(q, site.tz, self.now(), p.DEFAULT_SPAN["day"], MAX_SPAN)
        return Response(get_journeys().journeys(site, rng, question, limit))
