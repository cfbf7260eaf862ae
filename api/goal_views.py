"""Goals and funnels of a site through the API: list with their figures, create, delete.

Reading needs a key with the ``read`` scope; creating and deleting one with ``manage``
(:data:`footfall.models.MANAGE_SCOPE`). Bodies are validated by :mod:`api.goal_serializers`, which
apply the definitions' rules (:mod:`footfall.goals`) and the models'; a refused one is a 400 naming
the field at fault.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from api import goal_serializers as g
from api import serializers as s
from api.errors import validated
from api.views import ERRORS, FROM, SITE, TO, TZ, SiteView
from footfall.models import MANAGE_SCOPE, ApiKey, Funnel, Goal
from footfall.vocabulary import QueryError
from query import params as p
from query.runtime import get_conversions

T = TypeVar("T")
GOAL_FIELDS = ("name", "kind", "path", "event", "prop", "value", "revenue_prop", "currency_prop", "currency")
MANAGE_ERRORS = {
    **ERRORS,
    403: OpenApiResponse(s.ErrorSerializer, description="the key lacks the read (or, to change, manage) scope"),
}


def require_manage(request: Request) -> None:
    """Refuse (403) a key without the manage scope: every change of a site's definitions needs it."""
    key: ApiKey = request.auth
    if MANAGE_SCOPE not in key.scopes:
        raise PermissionDenied("this API key has no manage scope")


def _saved(make: Callable[[], T]) -> T:
    """``make()`` (validation and saving) in a transaction; model validation errors become a 400
    naming the field, as the serializers' do."""
    try:
        with transaction.atomic():
            return make()
    except ValidationError as err:
        raise QueryError(*g.model_refusal(err)) from None
    except IntegrityError:  # a name taken concurrently
        raise QueryError("name", "this site already has one of that name") from None


def _goal_json(goal: Goal) -> dict[str, object]:
    return {"goal_id": str(goal.pk), **{f: getattr(goal, f) for f in GOAL_FIELDS}}


class GoalsView(SiteView):
    @extend_schema(
        summary="The site's goals with their conversions",
        description=(
            "Per goal: conversions (`events`), unique conversions (`visitors`: distinct visitors per day, "
            "summed over the days of the range) and the conversion rate, unique conversions / visitors of "
            "the range. Settled days count the goals that existed when the day was rolled up (`sources.notes` "
            "names days rolled up before a goal existed); the realtime part counts every goal. Realtime page "
            "goals match the pages the speed layer kept per minute (see the breakdown's cap). Revenue goals "
            "add `revenue`: per currency the total, the conversions with revenue, the average per such "
            "conversion and the revenue per visitor of the range (amounts as exact decimal text), and the "
            "conversions without valid revenue."
        ),
        parameters=[SITE, FROM, TO, TZ],
        responses={200: s.GoalsSerializer, **ERRORS},
    )
    def get(self, request: Request, site_id: str) -> Response:
        q = self.params(request)
        site = self.site(request)
        rng = p.parse_range(q, site.tz, self.now(), p.DEFAULT_SPAN["day"], p.MAX_RANGE)
        specs = Goal.specs_by_site([site.site_id]).get(site.site_id, [])
        return Response(get_conversions().goals(site, rng, specs))

    @extend_schema(
        summary="Create a goal",
        description=(
            "A page goal: `kind` page and a `path` pattern (`*` matches any run of characters, `/` "
            "included; the whole path must match). An event goal: `kind` event, the `event` name and, "
            "optionally, a `prop` whose value must equal `value` (compared as text: true, 3, pro). A revenue "
            "goal (event goals without `prop`) names the property holding the amount (`revenue_prop`) and "
            "either the property holding the currency (`currency_prop`) or one fixed `currency`. "
            "Needs a key with the manage scope."
        ),
        parameters=[SITE],
        request=g.GoalInputSerializer,
        responses={201: s.GoalSerializer, **MANAGE_ERRORS},
    )
    def post(self, request: Request, site_id: str) -> Response:
        require_manage(request)
        site = request.auth.site

        def make() -> Goal:
            fields = validated(g.GoalInputSerializer, request.data, context={"site": site})
            return Goal.objects.create(site=site, **fields)

        return Response(_goal_json(_saved(make)), status=201)


class GoalView(SiteView):
    @extend_schema(
        summary="Delete a goal",
        description="Refused (400) while a funnel uses the goal. Needs a key with the manage scope.",
        parameters=[SITE, OpenApiParameter("goal_id", OpenApiTypes.INT, OpenApiParameter.PATH)],
        responses={204: None, **MANAGE_ERRORS},
    )
    def delete(self, request: Request, site_id: str, goal_id: int) -> Response:
        require_manage(request)
        goal = Goal.objects.filter(site_id=site_id, pk=goal_id).first()
        if goal is None:
            raise Http404("no such goal")
        if goal.funnel_steps.exists():
            names = sorted({step.funnel.name for step in goal.funnel_steps.select_related("funnel")})
            raise QueryError("goal_id", f"used by funnel(s) {', '.join(names)}: delete or change those first")
        goal.delete()
        return Response(status=204)


def _funnel_json(funnel: Funnel) -> dict[str, object]:
    spec = funnel.spec()
    return {
        "funnel_id": str(funnel.pk), "name": funnel.name, "window_minutes": funnel.window_minutes,
        "strict": funnel.strict, "steps": [{"goal_id": g.goal_id, "name": g.name} for g in spec.steps],
    }  # fmt: skip


class FunnelsView(SiteView):
    @extend_schema(
        summary="The site's funnels",
        operation_id="sites_funnels_list",  # else it collides with the report's generated id
        parameters=[SITE],
        responses={200: s.FunnelListSerializer, **ERRORS},
    )
    def get(self, request: Request, site_id: str) -> Response:
        funnels = Funnel.objects.filter(site_id=site_id).prefetch_related("steps__goal")
        return Response({"site_id": site_id, "results": [_funnel_json(f) for f in funnels]})

    @extend_schema(
        summary="Create a funnel",
        description=(
            "`steps`: 2 to 8 goal ids of the site, in order. `window_minutes`: 0 (default) counts steps "
            "within one session, else within that many minutes of the first step. `strict`: no other page "
            "view or event of the visitor between two steps. Needs a key with the manage scope."
        ),
        parameters=[SITE],
        request=g.FunnelInputSerializer,
        responses={201: s.FunnelSerializer, **MANAGE_ERRORS},
    )
    def post(self, request: Request, site_id: str) -> Response:
        require_manage(request)
        site = request.auth.site

        def make() -> Funnel:
            fields = validated(g.FunnelInputSerializer, request.data, context={"site": site})
            return Funnel.create(site, fields["name"], fields["steps"], fields["window_minutes"], fields["strict"])

        return Response(_funnel_json(_saved(make)), status=201)


class FunnelView(SiteView):
    @extend_schema(
        summary="A funnel's steps over a range",
        operation_id="sites_funnels_report",
        description=(
            "Per step: visitors reaching it (distinct per day, summed over the days), conversion from the "
            "step before and from the first, and the median time from the step before (exact for one day; "
            "for several days interpolated in the days' summed histogram: `median_estimated`). Counted by "
            "the nightly rollup only: days not settled yet are named in `sources.notes`."
        ),
        parameters=[SITE, OpenApiParameter("funnel_id", OpenApiTypes.INT, OpenApiParameter.PATH), FROM, TO, TZ],
        responses={200: s.FunnelReportSerializer, **ERRORS},
    )
    def get(self, request: Request, site_id: str, funnel_id: int) -> Response:
        funnel = Funnel.objects.filter(site_id=site_id, pk=funnel_id).first()
        if funnel is None:
            raise Http404("no such funnel")
        q = self.params(request)
        site = self.site(request)
        rng = p.parse_range(q, site.tz, self.now(), p.DEFAULT_SPAN["day"], p.MAX_RANGE)
        return Response(get_conversions().funnel(site, funnel.spec(), rng))

    @extend_schema(
        summary="Delete a funnel",
        description="Needs a key with the manage scope.",
        parameters=[SITE, OpenApiParameter("funnel_id", OpenApiTypes.INT, OpenApiParameter.PATH)],
        responses={204: None, **MANAGE_ERRORS},
    )
    def delete(self, request: Request, site_id: str, funnel_id: int) -> Response:
        require_manage(request)
        deleted, _ = Funnel.objects.filter(site_id=site_id, pk=funnel_id).delete()
        if not deleted:
            raise Http404("no such funnel")
        return Response(status=204)
