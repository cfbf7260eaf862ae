"""HTTP views of the REST API."""

from __future__ import annotations

from django.conf import settings
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.health import check_all


class HealthView(APIView):
    """``GET /api/v1/health``: 200 when Kafka, Redis and Mongo answer, else 503 with reasons."""

    authentication_classes: list = []
    permission_classes: list = []

    def get(self, request: Request) -> Response:
        problems = check_all(settings.FOOTFALL)
        body = {name: ("ok" if err is None else err) for name, err in problems.items()}
        healthy = all(err is None for err in problems.values())
        return Response({"status": "ok" if healthy else "degraded", "services": body}, status=200 if healthy else 503)
