"""Django app config of the batch layer's serving side (archiver, rollups, Mongo store)."""

from django.apps import AppConfig


class HistoricalConfig(AppConfig):
    name = "historical"
    verbose_name = "Footfall historical rollups"
