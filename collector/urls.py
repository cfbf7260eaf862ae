"""Routes of the collector; include them at the root of a site (``path("", include("collector.urls"))``).

The tracker and the collect endpoint answer at ``/footfall.js`` and ``/collect`` always, and
also at the paths a deployment chose (``FOOTFALL_TRACKER_PATH``, ``FOOTFALL_COLLECT_PATH``):
names content blockers do not list (docs/collector.md#your-own-domain).
"""

from django.urls import path

from collector import views
from footfall.config import footfall_config

_cfg = footfall_config()

urlpatterns = [
    path("collect", views.collect, name="collect"),
    path("p.gif", views.pixel, name="pixel"),
    path("footfall.js", views.tracker, name="tracker"),
    path("api/v1/sites/<slug:site_id>/events", views.ingest_batch, name="ingest-batch"),
    path("api/v1/sites/<slug:site_id>/salts", views.site_salts, name="site-salts"),
]
if _cfg.collect_path != "/collect":
    urlpatterns.append(path(_cfg.collect_path.removeprefix("/"), views.collect, name="collect-chosen"))
if _cfg.tracker_path != "/footfall.js":
    urlpatterns.append(path(_cfg.tracker_path.removeprefix("/"), views.tracker, name="tracker-chosen"))
