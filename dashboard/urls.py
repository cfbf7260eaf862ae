"""Routes of the dashboard, mounted at ``/dashboard/`` (the Dash app is built for that prefix)."""

from django.urls import path, re_path

from dashboard import views

app_name = "dashboard"
urlpatterns = [
    path("login/", views.DashboardLoginView.as_view(), name="login"),
    path("logout/", views.DashboardLogoutView.as_view(), name="logout"),
    path("share/<str:token>", views.share, name="share"),
    path("events/poll", views.live_events_poll, name="live-events-poll"),
    path("", views.forward, name="home"),
    re_path(r"^(?P<rest>.+)$", views.forward, name="app"),
]
