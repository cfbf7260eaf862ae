"""URLconf of the collector benchmark: the project's routes, ``/bench/page`` (a small HTML page,
no database query: the cheaper the page, the more conservative the middleware's ratio) and
``/bench/empty`` (a bare 204, what the beacon is compared with)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.template import engines
from django.urls import include, path

PAGE = engines["django"].from_string(
    """<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>{{ title }} · Footfall bench</title>
  <link rel="stylesheet" href="/static/site.css">
</head>
<body>
  <header><nav>{% for link in nav %}<a href="{{ link.href }}">{{ link.label }}</a>{% endfor %}</nav></header>
  <main>
    <h1>{{ title }}</h1>
    <p>{{ intro }}</p>
    <ul class="products">
    {% for item in items %}
      <li><a href="/products/{{ item.slug }}">{{ item.name }}</a> <span>{{ item.price|floatformat:2 }} €</span></li>
    {% endfor %}
    </ul>
  </main>
  <footer>© {{ year }} Example &amp; Co</footer>
</body>
</html>
"""
)
NAV = [{"href": f"/{name.lower()}", "label": name} for name in ("Home", "Products", "Blog", "About", "Contact")]
ITEMS = [{"slug": f"item-{n}", "name": f"Product <{n}> & more", "price": 9.5 + n} for n in range(12)]


CONTEXT = {"title": "Spring catalogue", "intro": "Everything you need for the garden, delivered in two days.",
           "nav": NAV, "items": ITEMS, "year": 2026}  # fmt: skip


def page(request: HttpRequest) -> HttpResponse:
    """About 2 KB of HTML, rendered per request with a request context."""
    return HttpResponse(PAGE.render(CONTEXT, request))


urlpatterns = [
    path("bench/page", page, name="bench-page"),
    path("bench/empty", lambda request: HttpResponse(status=204), name="bench-empty"),
    path("", include("footfall.urls")),
]
