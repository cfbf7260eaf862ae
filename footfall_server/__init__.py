"""The Django project of the Footfall server: settings, URLs, WSGI/ASGI entry points, the Celery
app and its schedule. It wires the apps below it together and nothing imports it back.

The Celery app is loaded with the project (Django's documented pattern), so it is the default
app of every server process, web ones included, and the apps below the project send tasks
through ``celery.current_app``.
"""

from footfall_server.celery_app import app as celery_app

__all__ = ["celery_app"]
