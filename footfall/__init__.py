"""The Django project package of Footfall (settings, URLs, WSGI/ASGI entry points, Celery app)
and its core app ``footfall_core``: the configuration accessor and the models every part shares.

Kept free of import-time side effects: the event model (``footfall_capture.events``) is imported
by Spark executors and Kafka workers that never load Django.
"""
