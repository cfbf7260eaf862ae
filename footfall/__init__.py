"""Footfall's core app ``footfall_core``: the configuration accessor, the vocabulary and the
models every part shares. The project's wiring (settings, URLs, Celery) is ``footfall_server``.

Kept free of import-time side effects: the event model (``footfall_capture.events``) is imported
by Spark executors and Kafka workers that never load Django.
"""
