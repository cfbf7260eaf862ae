"""Django app config of the REST API."""

from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "api"
    # Prefixed so the label (tables, migrations, permissions) cannot clash with a host project's app.
    label = "footfall_api"
    verbose_name = "Footfall API"
