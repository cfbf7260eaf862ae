"""Routes of alerts and reports, mounted at ``/alerts/``."""

from django.urls import path

from alerts import views

app_name = "alerts"
urlpatterns = [
    path("unsubscribe/<str:token>", views.unsubscribe, name="unsubscribe"),
]
