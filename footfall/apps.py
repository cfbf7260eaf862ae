"""Django app config of Footfall's core (label ``footfall_core``): the models every part shares."""

from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "footfall"
    # Prefixed like the other apps so the label cannot clash with a host project's app.
    label = "footfall_core"
    verbose_name = "Footfall"
