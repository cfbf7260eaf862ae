"""Django app config of the batch layer's serving side (archiver, rollups, Mongo store)."""

from django.apps import AppConfig


class HistoricalConfig(AppConfig):
    name = "historical"
    # Prefixed so the label (tables, migrations, permissions) cannot clash with a host project's app.
    label = "footfall_historical"
    verbose_name = "Footfall historical rollups"
