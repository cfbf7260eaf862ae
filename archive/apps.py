"""Django app config of the raw archive (its ``run_archiver`` and ``compact_archive`` commands)."""

from django.apps import AppConfig


class ArchiveConfig(AppConfig):
    name = "archive"
    # Prefixed so the label cannot clash with a host project's app.
    label = "footfall_archive"
    verbose_name = "Footfall raw archive"
