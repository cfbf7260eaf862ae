"""ASGI entry point: ``uvicorn footfall.asgi:application`` (or any ASGI server)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "footfall.settings")
application = get_asgi_application()
