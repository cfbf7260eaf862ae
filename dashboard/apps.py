"""Django app config of the dashboard (label ``footfall_dashboard``)."""

from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "dashboard"
    # Prefixed so the label (tables, migrations, permissions) cannot clash with a host project's app.
    label = "footfall_dashboard"
    verbose_name = "Footfall dashboard"
