"""Root URL configuration."""

from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView

urlpatterns = [
    path("admin/imports/", include("dashboard.imports_admin")),  # before the admin's own catch-all
    path("admin/", admin.site.urls),
    path("", include("collector.urls")),
    path("api/v1/", include("api.urls")),
    path("dashboard/", include("dashboard.urls")),
    path("alerts/", include("alerts.urls")),
    path("", RedirectView.as_view(url="/dashboard/", permanent=False)),
]
