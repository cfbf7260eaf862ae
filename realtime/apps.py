"""Django app config of the realtime layer (its management commands)."""

from django.apps import AppConfig


class RealtimeConfig(AppConfig):
    name = "realtime"
    # Prefixed so the label (tables, migrations, permissions) cannot clash with a host project's app.
    label = "footfall_realtime"
    verbose_name = "Footfall realtime counters"
