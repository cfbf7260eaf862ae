"""Django app config of the collector (label ``footfall_collector``)."""

from django.apps import AppConfig


class CollectorConfig(AppConfig):
    name = "collector"
    # Prefixed so the label (tables, migrations, permissions) cannot clash with a host project's app.
    label = "footfall_collector"
    verbose_name = "Footfall collector"
