"""``GET /api/v1/sites/<site>/export``: the site's raw events over a range, streamed as Parquet,
CSV or JSON lines (query/raw_export.py), for a key with the ``export`` scope."""

from __future__ import annotations

import itertools
import logging

from django.http import HttpResponse, JsonResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.request import Request

from api.auth import SiteExportAccess
from api.views import ERRORS, FROM, SITE, TO, TZ, SiteView
from query import params as p
from query import raw_export

log = logging.getLogger(__name__)
FILES = {
    (200, media.split(";")[0]): OpenApiResponse(OpenApiTypes.BINARY, description=f"the file ({fmt})")
    for fmt, media in raw_export.CONTENT_TYPES.items()
}
FORMAT = OpenApiParameter("format", OpenApiTypes.STR, enum=list(raw_export.FORMATS), description="default parquet")


class _AnswerInJson(DefaultContentNegotiation):
    """``format`` names the export's file format here, not one of DRF's renderers: errors are JSON."""

    def select_renderer(self, request: Request, renderers: list, format_suffix: str | None = None) -> tuple:
        return renderers[0], renderers[0].media_type


class ExportView(SiteView):
    permission_classes = [SiteExportAccess]
    content_negotiation_class = _AnswerInJson

    @extend_schema(
        summary="The site's raw events (an export)",
        description="Every event of the site with from <= time < to, as the batch layer counts them (one copy "
        "per event id), oldest first, streamed. Columns: docs/leaving.md. Needs a key with the export scope.",
        parameters=[SITE, FROM, TO, TZ, FORMAT],
        responses={**FILES, **ERRORS},
    )
    def get(self, request: Request, site_id: str) -> HttpResponse:
        q = self.params(request)
        fmt = p.choice(q, "format", raw_export.FORMATS, "parquet")
        site = self.site(request)
        rng = p.parse_range(q, site.tz, self.now(), raw_export.DEFAULT_SPAN, raw_export.MAX_SPAN)
        pieces = raw_export.pieces(site.site_id, rng, fmt)
        try:
            first = next(pieces, b"")  # an archive that cannot be read answers 503 before the file starts
        except OSError as exc:
            log.warning("export of %s: the archive cannot be read: %s", site.site_id, exc)
            message = "the archive cannot be read right now; try again later"
            return JsonResponse({"error": {"parameter": None, "message": message}}, status=503)
        response = StreamingHttpResponse(itertools.chain([first], pieces), content_type=raw_export.CONTENT_TYPES[fmt])
        response["Content-Disposition"] = f'attachment; filename="{raw_export.file_name(site.site_id, rng, fmt)}"'
        response["Cache-Control"] = "no-store"
        return response
