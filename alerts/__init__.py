"""Alerts and scheduled reports: rules checked from Celery against the query layer, the
episodes they open and resolve, and their delivery by email and webhook."""
