"""Django app config of the query layer: connects reconciliation to the batch layer's rollups."""

from django.apps import AppConfig


class QueryConfig(AppConfig):
    name = "query"
    label = "footfall_query"
    verbose_name = "Footfall query layer"

    def ready(self) -> None:
        from historical.signals import rollup_finished
        from query.reconcile import reconcile_rolled_up

        rollup_finished.connect(reconcile_rolled_up, dispatch_uid="footfall.query.reconcile")
