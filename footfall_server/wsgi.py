"""WSGI entry point: ``gunicorn footfall_server.wsgi`` (or any WSGI server)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "footfall_server.settings")
application = get_wsgi_application()
