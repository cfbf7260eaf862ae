"""A site's imported history through the API: list its imports, delete one.

Listing needs a key with the ``read`` scope, deleting one with ``manage``
(:data:`footfall.models.MANAGE_SCOPE`). Imports are made with ``manage.py imports add``
(:mod:`historical.imported`); their days answer the query endpoints as ``sources.imported``.
"""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from api import serializers as s
from api.goal_views import MANAGE_ERRORS, require_manage
from api.views import ERRORS, SITE, SiteView
from query.runtime import get_imports
from query.stores import ImportSummary


def import_json(one: ImportSummary) -> dict[str, object]:
    return {
        "import_id": one.import_id, "source": one.source, "files": list(one.files), "first": one.first,
        "last": one.last, "days": one.days, "rows": dict(one.rows), "created": one.created.isoformat(),
        "state": one.state,
    }  # fmt: skip


class ImportsView(SiteView):
    @extend_schema(
        summary="The site's imports of another product's history",
        description=(
            "Oldest first. A `complete` import answers its days, first to last, where the site has not "
            "settled them itself (or on every day, when the site prefers its imports); a `loading` one "
            "answers nothing (being written, or cut short: delete it)."
        ),
        parameters=[SITE],
        responses={200: s.ImportListSerializer, **ERRORS},
    )
    def get(self, request: Request, site_id: str) -> Response:
        site = self.site(request)  # the key's site, which the URL's must be
        found = get_imports().listed(site.site_id)
        return Response({"site_id": site.site_id, "results": [import_json(one) for one in found]})


class ImportView(SiteView):
    @extend_schema(
        summary="Delete an import",
        description="Removes the import and every figure it brought. Needs a key with the manage scope.",
        parameters=[SITE, OpenApiParameter("import_id", OpenApiTypes.STR, OpenApiParameter.PATH)],
        responses={204: None, **MANAGE_ERRORS},
    )
    def delete(self, request: Request, site_id: str, import_id: str) -> Response:
        require_manage(request)
        try:
            get_imports().delete(import_id, self.site(request).site_id)
        except KeyError:
            raise Http404("no such import") from None
        return Response(status=204)
