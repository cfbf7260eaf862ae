"""The API's CSV renderer (``Accept: text/csv`` or ``format=csv``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework.renderers import BaseRenderer

from query.export import to_csv


class CsvRenderer(BaseRenderer):
    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(
        self, data: Any, accepted_media_type: str | None = None, renderer_context: Mapping | None = None
    ) -> bytes:
        return to_csv(data).encode()
