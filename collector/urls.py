"""Routes of the collector; include them at the root of a site (``path("", include("collector.urls"))``)."""

from django.urls import path

from collector import views

urlpatterns = [
    path("collect", views.collect, name="collect"),
    path("p.gif", views.pixel, name="pixel"),
    path("footfall.js", views.tracker, name="tracker"),
    path("api/v1/sites/<slug:site_id>/events", views.ingest_batch, name="ingest-batch"),
    path("api/v1/sites/<slug:site_id>/salts", views.site_salts, name="site-salts"),
]
