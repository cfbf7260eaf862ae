"""URL routes of the REST API, mounted at ``/api/v1/``."""

from django.urls import path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from api import alert_views, export_views, goal_views, import_views, journey_views, views
from api.errors import not_found

app_name = "api"
SITE = "sites/<str:site_id>/"
urlpatterns = [
    path("health", views.HealthView.as_view(), name="health"),
    path("schema", SpectacularAPIView.as_view(), name="schema"),
    path("docs", SpectacularSwaggerView.as_view(url_name="api:schema"), name="docs"),
    path(SITE + "timeseries", views.TimeseriesView.as_view(), name="timeseries"),
    path(SITE + "breakdown/<str:dimension>", views.BreakdownView.as_view(), name="breakdown"),
    path(SITE + "referrers/<str:ref_domain>/pages", views.ReferrerPagesView.as_view(), name="referrer-pages"),
    # A page path holds slashes: everything between pages/ and /referrers.
    re_path(
        r"^sites/(?P<site_id>[^/]+)/pages/(?P<page_path>.+)/referrers$",
        views.PageReferrersView.as_view(),
        name="page-referrers",
    ),
    path(SITE + "realtime", views.RealtimeView.as_view(), name="realtime"),
    path(SITE + "aggregate", views.AggregateView.as_view(), name="aggregate"),
    path(
        SITE + "events/<str:event>/properties/<str:prop>", views.EventPropertiesView.as_view(), name="event-properties"
    ),
    path(SITE + "journeys", journey_views.JourneysView.as_view(), name="journeys"),
    path(SITE + "export", export_views.ExportView.as_view(), name="export"),
    path(SITE + "imports", import_views.ImportsView.as_view(), name="imports"),
    path(SITE + "imports/<str:import_id>", import_views.ImportView.as_view(), name="import"),
    path(SITE + "goals", goal_views.GoalsView.as_view(), name="goals"),
    path(SITE + "goals/<int:goal_id>", goal_views.GoalView.as_view(), name="goal"),
    path(SITE + "funnels", goal_views.FunnelsView.as_view(), name="funnels"),
    path(SITE + "funnels/<int:funnel_id>", goal_views.FunnelView.as_view(), name="funnel"),
    path(SITE + "alerts/rules", alert_views.RulesView.as_view(), name="alert-rules"),
    path(SITE + "alerts/rules/<int:rule_id>", alert_views.RuleView.as_view(), name="alert-rule"),
    path(SITE + "alerts/channels", alert_views.ChannelsView.as_view(), name="alert-channels"),
    path(SITE + "alerts/channels/<int:channel_id>", alert_views.ChannelView.as_view(), name="alert-channel"),
    path(
        SITE + "alerts/channels/<int:channel_id>/secret",
        alert_views.ChannelSecretView.as_view(),
        name="alert-channel-secret",
    ),
    path(SITE + "alerts/episodes", alert_views.EpisodesView.as_view(), name="alert-episodes"),
    path(SITE + "reports/subscriptions", alert_views.SubscriptionsView.as_view(), name="report-subscriptions"),
    path(
        SITE + "reports/subscriptions/<int:subscription_id>",
        alert_views.SubscriptionView.as_view(),
        name="report-subscription",
    ),
    # Last: anything else under the API answers a JSON 404 (documented), never an HTML page.
    re_path(r"^", not_found, name="not-found"),
]
