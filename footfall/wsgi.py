"""WSGI entry point: ``gunicorn footfall.wsgi`` (or any WSGI server)."""

import os

from django.core.wsgi import get_wsgi_application

from footfall.wsgi_request import Request

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "footfall.settings")
application = get_wsgi_application()
# Django's request with the Content-Type parsing of beacons memoized (see footfall/wsgi_request.py).
application.request_class = Request
