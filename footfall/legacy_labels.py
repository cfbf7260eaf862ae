"""Adopting a database migrated when the server's apps had unprefixed labels.

Until the apps were labelled ``footfall_collector`` and ``footfall_dashboard`` their tables
were ``collector_site``, ``dashboard_sharelink`` and so on. Each app's first migration runs
:func:`create_or_adopt`: a fresh database gets new tables, an old one has its tables renamed
(rows, keys and foreign keys kept) and its content types moved to the new label, so
permissions and admin history stay attached. The old rows in ``django_migrations`` are left
as history: no installed app has those labels any more, so Django ignores them.

Models that later move from one app to another (Site and ApiKey, from ``footfall_collector``
to ``footfall_core``) take their content types along with :func:`relabel`.
"""

from __future__ import annotations

from collections.abc import Callable

from django.apps.registry import Apps
from django.db.backends.base.schema import BaseDatabaseSchemaEditor

Step = Callable[[Apps, BaseDatabaseSchemaEditor], None]


def create_or_adopt(label: str, legacy_label: str, models: list[str]) -> tuple[Step, Step]:
    """Forward and backward functions for ``migrations.RunPython`` creating ``models`` of app
    ``label`` (in dependency order), or renaming their tables from ``legacy_label``."""

    def forward(apps: Apps, schema_editor: BaseDatabaseSchemaEditor) -> None:
        tables = set(schema_editor.connection.introspection.table_names())
        for name in models:
            model = apps.get_model(label, name)
            legacy_table = f"{legacy_label}_{model._meta.model_name}"
            if legacy_table in tables:
                schema_editor.alter_db_table(model, legacy_table, model._meta.db_table)
            else:
                schema_editor.create_model(model)
        move_content_types(apps, schema_editor, models, legacy_label, label)

    def backward(apps: Apps, schema_editor: BaseDatabaseSchemaEditor) -> None:
        for name in reversed(models):
            schema_editor.delete_model(apps.get_model(label, name))

    return forward, backward


def relabel(models: list[str], old_label: str, new_label: str) -> tuple[Step, Step]:
    """Forward and backward functions for ``migrations.RunPython`` moving the content types of
    ``models`` from app ``old_label`` to ``new_label`` when the models themselves move there."""

    def forward(apps: Apps, schema_editor: BaseDatabaseSchemaEditor) -> None:
        move_content_types(apps, schema_editor, models, old_label, new_label)

    def backward(apps: Apps, schema_editor: BaseDatabaseSchemaEditor) -> None:
        move_content_types(apps, schema_editor, models, new_label, old_label)

    return forward, backward


def move_content_types(
    apps: Apps, schema_editor: BaseDatabaseSchemaEditor, models: list[str], old_label: str, new_label: str
) -> None:
    """Give the content types of ``models`` under ``old_label`` to ``new_label`` (unless it has
    them already), so permissions and admin history follow the models."""
    content_types = apps.get_model("contenttypes", "ContentType").objects.using(schema_editor.connection.alias)
    for name in models:
        model_name = name.lower()
        if not content_types.filter(app_label=new_label, model=model_name).exists():
            content_types.filter(app_label=old_label, model=model_name).update(app_label=new_label)
