"""Django app config of alerts and reports (label ``footfall_alerts``)."""

from django.apps import AppConfig


class AlertsConfig(AppConfig):
    name = "alerts"
    # Prefixed so the label (tables, migrations, permissions) cannot clash with a host project's app.
    label = "footfall_alerts"
    verbose_name = "Footfall alerts and reports"
