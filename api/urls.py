"""URL routes of the REST API, mounted at ``/api/v1/``."""

from django.urls import path

from api.views import HealthView

app_name = "api"
urlpatterns = [
    path("health", HealthView.as_view(), name="health"),
]
