"""URLconf of the collector benchmark: the project's routes plus two bench views.

``/bench/page`` is a small HTML page (a template rendered with a request context, no
database query: the cheaper the page, the larger the middleware's share, so the ratio is a
conservative one); ``/bench/empty`` a bare 204, what the beacon endpoint is compared with.
"""

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


def page(request: HttpRequest) -> HttpResponse:
    """A small HTML page (about 2 KB), rendered per request."""
    context = {
        "title": "Spring catalogue",
        "intro": "Everything you need for the garden, delivered in two days.",
        "nav": NAV,
        "items": ITEMS,
        "year": 2026,
    }
    return HttpResponse(PAGE.render(context, request))


def empty(request: HttpRequest) -> HttpResponse:
    """Nothing at all: 204."""
    return HttpResponse(status=204)


urlpatterns = [
    path("bench/page", page, name="bench-page"),
    path("bench/empty", empty, name="bench-empty"),
    path("", include("footfall.urls")),
]
