"""Django app config of the dashboard (``INSTALLED_APPS += ["dashboard"]``)."""

from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "dashboard"
    verbose_name = "Footfall dashboard"
