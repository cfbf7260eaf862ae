"""Root URL configuration."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include("collector.urls")),
    path("api/v1/", include("api.urls")),
]
