"""Django app config of the realtime layer (its management commands)."""

from django.apps import AppConfig


class RealtimeConfig(AppConfig):
    name = "realtime"
    verbose_name = "Footfall realtime counters"
