"""ASGI entry point: ``uvicorn footfall_server.asgi:application`` (or any ASGI server)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "footfall_server.settings")
application = get_asgi_application()
