"""Admin of alerts and reports: rules with their channels, channels (a webhook's secret shown, so
the receiver can be configured, and rotated by an action), report subscriptions, and, read-only,
the episodes and the delivery log.

Episodes and deliveries are written by the checks and the delivery tasks only: an edit here
would make the log say what did not happen.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join
from django.utils.text import Truncator

from alerts.models import (
    THRESHOLD_MEANING,
    WEBHOOK,
    AlertRule,
    Channel,
    Delivery,
    Episode,
    ReportSubscription,
    new_secret,
)


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows listed and shown, never added, changed or deleted by hand."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class RuleForm(forms.ModelForm):
    class Meta:
        model = AlertRule
        fields = "__all__"
        help_texts = {
            "threshold": format_html(
                "Per kind: <ul>{}</ul>",
                format_html_join("", "<li><b>{}</b>: {}</li>", THRESHOLD_MEANING.items()),
            )
        }

    def clean(self) -> dict:
        cleaned = super().clean()
        site, channels = cleaned.get("site"), cleaned.get("channels")
        if site is not None and channels is not None:
            foreign = [c.name for c in channels if c.site_id != site.pk]
            if foreign:
                self.add_error("channels", f"not channels of this site: {', '.join(foreign)}")
        return cleaned


class OpenFilter(admin.SimpleListFilter):
    title = "status"
    parameter_name = "status"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [("open", "open"), ("resolved", "resolved")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() in ("open", "resolved"):
            return queryset.filter(resolved_at__isnull=self.value() == "open")
        return queryset


class SubscribedFilter(admin.SimpleListFilter):
    title = "subscribed"
    parameter_name = "subscribed"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [("yes", "subscribed"), ("no", "unsubscribed")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() in ("yes", "no"):
            return queryset.filter(unsubscribed_at__isnull=self.value() == "yes")
        return queryset


@admin.register(AlertRule)
class AlertRuleAdmin(admin.ModelAdmin):
    form = RuleForm
    list_display = ("name", "site", "kind", "threshold", "window_minutes", "max_per_day", "channel_names", "enabled")
    list_filter = ("site", "kind", "enabled")
    search_fields = ("name", "value")
    filter_horizontal = ("channels",)
    autocomplete_fields = ("goal",)
    list_select_related = ("site",)

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).prefetch_related("channels")

    @admin.display(description="channels")
    def channel_names(self, rule: AlertRule) -> str:
        return ", ".join(c.name for c in rule.channels.all()) or "-"


@admin.register(Channel)
class ChannelAdmin(admin.ModelAdmin):
    list_display = ("name", "site", "kind", "target", "slack", "enabled", "created_at")
    list_filter = ("site", "kind", "enabled")
    search_fields = ("name", "email", "url")
    readonly_fields = ("secret", "created_at")
    actions = ["rotate_secret"]
    # A URL typed without a scheme is taken as https (Django 6's default, said now).
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}

    @admin.display(description="recipient or endpoint")
    def target(self, channel: Channel) -> str:
        return channel.email or channel.url

    @admin.action(description="Rotate the webhook secret of the selected channels")
    def rotate_secret(self, request: HttpRequest, queryset: QuerySet[Channel]) -> None:
        rotated = 0
        for channel in queryset.filter(kind=WEBHOOK):
            channel.secret = new_secret()
            channel.save(update_fields=["secret"])
            rotated += 1
        skipped = queryset.exclude(kind=WEBHOOK).count()
        self.message_user(
            request,
            f"New secret for {rotated} webhook(s): configure each receiver with the one shown on its page."
            + (f" {skipped} email channel(s) left alone: they sign nothing." if skipped else ""),
            messages.SUCCESS if rotated else messages.WARNING,
        )


@admin.register(Episode)
class EpisodeAdmin(ReadOnlyAdmin):
    list_display = ("rule", "site", "kind", "opened_at", "resolved_at", "value", "peak", "suppressed")
    list_filter = (OpenFilter, ("rule__site", admin.RelatedOnlyFieldListFilter), "rule__kind", "suppressed")
    search_fields = ("rule__name",)
    date_hierarchy = "opened_at"
    list_select_related = ("rule__site",)

    @admin.display(description="site", ordering="rule__site")
    def site(self, episode: Episode) -> str:
        return str(episode.rule.site)

    @admin.display(description="kind", ordering="rule__kind")
    def kind(self, episode: Episode) -> str:
        return episode.rule.get_kind_display()


@admin.register(ReportSubscription)
class ReportSubscriptionAdmin(admin.ModelAdmin):
    list_display = ("email", "site", "frequency", "created_at", "unsubscribed_at", "last_period")
    list_filter = ("site", "frequency", SubscribedFilter)
    search_fields = ("email",)
    readonly_fields = ("last_period",)


@admin.register(Delivery)
class DeliveryAdmin(ReadOnlyAdmin):
    list_display = (
        "created_at", "event", "recipient", "episode", "period", "status", "attempts", "response_status",
        "error", "sent_at",
    )  # fmt: skip
    list_filter = ("status", ("channel", admin.RelatedOnlyFieldListFilter), "event", "channel__kind")
    search_fields = ("channel__name", "subscription__email", "last_error")
    date_hierarchy = "created_at"
    list_select_related = ("channel", "subscription", "episode__rule")

    @admin.display(description="to")
    def recipient(self, delivery: Delivery) -> str:
        return str(delivery.channel or delivery.subscription)

    @admin.display(description="last error")
    def error(self, delivery: Delivery) -> str:
        return Truncator(delivery.last_error).chars(120)
