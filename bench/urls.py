"""URLconf of the collector benchmark: the project's, ``/bench/page`` (small HTML, no query: the cheaper
the page, the more conservative the middleware's ratio), ``/bench/empty`` (a 204, the beacon's baseline)."""

from __future__ import annotations

from pathlib import Path

from django.http import HttpRequest, HttpResponse
from django.template import engines
from django.urls import include, path

PAGE = engines["django"].from_string(Path(__file__).with_name("page.html").read_text())
CONTEXT = {"title": "Spring catalogue", "intro": "Everything you need for the garden, delivered in two days.",
           "nav": [{"href": f"/{n.lower()}", "label": n} for n in ("Home", "Products", "Blog", "About", "Contact")],
           "items": [{"slug": f"item-{n}", "name": f"Product <{n}> & more", "price": 9.5 + n} for n in range(12)],
           "year": 2026}  # fmt: skip


def page(request: HttpRequest) -> HttpResponse:  # about 2 KB of HTML, rendered with a request context
    return HttpResponse(PAGE.render(CONTEXT, request))


urlpatterns = [
    path("bench/page", page, name="bench-page"),
    path("bench/empty", lambda request: HttpResponse(status=204), name="bench-empty"),
    path("", include("footfall_server.urls")),
]
