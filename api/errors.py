"""One JSON error shape for the whole API: ``{"error": {"parameter": name | null, "message": text}}``."""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Any

from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler
from rest_framework.views import set_rollback

from footfall.vocabulary import QueryError
from footfall_capture.quiet_log import quiet_logger
from query.health import BREAKERS, unavailable_store

log = logging.getLogger(__name__)
outage_log = quiet_logger(f"{__name__}.stores")  # one line a minute per store while it is down
INTERNAL_ERROR = "internal error: the server could not answer this request; it has been logged"
STORE_NAMES = {"mongo": "settled data (MongoDB)", "redis": "realtime data (Redis)"}


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    """Query errors become 400 naming the parameter; a store that is down or does not answer
    in time, 503 with ``Retry-After``; DRF's own errors (401, 403, 404, 405, 429 with
    ``Retry-After``) keep their status and headers but take the same body shape; any other
    exception is logged with its traceback and answers 500 in that shape, never a page."""
    if isinstance(exc, QueryError):
        message = str(exc).removeprefix(f"{exc.parameter}: ")
        return Response({"error": {"parameter": exc.parameter, "message": message}}, status=status.HTTP_400_BAD_REQUEST)
    store = unavailable_store(exc)
    if store is not None:  # within the store's timeout (MONGO_TIMEOUT_MS, REDIS_TIMEOUT_MS), or at once
        outage_log.warning("API reads fail: the %s store is unavailable (%s)", store, exc)
        message = f"the {STORE_NAMES[store]} store is unavailable right now; try again shortly"
        body = {"error": {"parameter": None, "message": message}}
        headers = {"Retry-After": str(max(1, math.ceil(BREAKERS[store].retry_after_s())))}
        response = Response(body, status=status.HTTP_503_SERVICE_UNAVAILABLE, headers=headers)
        response._has_been_logged = True  # logged above, once a minute: not an ERROR line per request
        return response
    response = drf_exception_handler(exc, context)
    if response is None:
        view = context.get("view")
        request = context.get("request")
        log.error(
            "API error in %s (%s %s)",
            type(view).__name__ if view is not None else "a view",
            getattr(request, "method", "?"),
            getattr(request, "path", "?"),
            exc_info=exc,
        )
        set_rollback()  # as DRF does for the errors it handles: nothing half-written is committed
        body = {"error": {"parameter": None, "message": INTERNAL_ERROR}}
        return Response(body, status=status.HTTP_500_INTERNAL_SERVER_ERROR)
    detail = response.data.get("detail") if isinstance(response.data, dict) else response.data
    response.data = {"error": {"parameter": None, "message": str(detail)}}
    return response


def validated(
    serializer_class: type[serializers.Serializer],
    data: Any,
    partial: bool = False,
    context: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``data`` checked by ``serializer_class``; the first error becomes a 400 naming its field."""
    serializer = serializer_class(data=data, partial=partial, context=context or {})
    if serializer.is_valid():
        return dict(serializer.validated_data)
    field, errors = next(iter(serializer.errors.items()))
    while isinstance(errors, Mapping):  # a list field's errors are keyed by the item's index
        errors = next(iter(errors.values()))
    message = str(errors[0]) if isinstance(errors, list) and errors else str(errors)
    raise QueryError("body" if field == "non_field_errors" else field, message)


@csrf_exempt  # it changes nothing; without this a DELETE or POST to no endpoint got the CSRF 403 page
def not_found(request: HttpRequest, *args: object, **kwargs: object) -> JsonResponse:
    """A URL under the API that matches no endpoint (e.g. a path segment holding an encoded
    slash or a newline): the API's JSON 404, not Django's HTML page."""
    return JsonResponse({"error": {"parameter": None, "message": "no such API endpoint"}}, status=404)
