"""Django app config of the collector (``INSTALLED_APPS += ["collector"]``)."""

from django.apps import AppConfig


class CollectorConfig(AppConfig):
    name = "collector"
    verbose_name = "Footfall collector"
