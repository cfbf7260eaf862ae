"""Admin for sites, API keys (created with `manage.py create_api_key`, shown once), goals and funnels."""

from django.contrib import admin
from django.core.exceptions import ValidationError
from django.forms.models import BaseInlineFormSet

from footfall.goals import MAX_FUNNEL_STEPS, MIN_FUNNEL_STEPS
from footfall.models import ApiKey, Funnel, FunnelStep, Goal, Site


@admin.register(Site)
class SiteAdmin(admin.ModelAdmin):
    list_display = ("site_id", "name", "timezone", "respect_dnt", "drop_bots", "imports_win", "created_at")
    search_fields = ("site_id", "name")


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ("prefix", "site", "name", "scopes", "created_at", "expires_at", "last_used_at", "revoked_at")
    list_filter = ("site",)
    readonly_fields = ("prefix", "key_hash", "created_at", "last_used_at")

    def has_add_permission(self, request: object) -> bool:
        return False  # the plaintext must be shown once; the command does that


@admin.register(Goal)
class GoalAdmin(admin.ModelAdmin):
    list_display = ("name", "site", "kind", "path", "event", "prop", "value", "revenue_prop", "currency", "created_at")
    list_filter = ("site", "kind")
    search_fields = ("name", "path", "event")


class FunnelStepFormSet(BaseInlineFormSet):
    def clean(self) -> None:
        super().clean()
        kept = [f for f in self.forms if f.cleaned_data and not f.cleaned_data.get("DELETE")]
        if not MIN_FUNNEL_STEPS <= len(kept) <= MAX_FUNNEL_STEPS:
            raise ValidationError(f"a funnel has {MIN_FUNNEL_STEPS} to {MAX_FUNNEL_STEPS} steps")


class FunnelStepInline(admin.TabularInline):
    model = FunnelStep
    formset = FunnelStepFormSet
    extra = 2
    max_num = MAX_FUNNEL_STEPS
    ordering = ("position",)


@admin.register(Funnel)
class FunnelAdmin(admin.ModelAdmin):
    list_display = ("name", "site", "window_minutes", "strict", "created_at")
    list_filter = ("site",)
    inlines = [FunnelStepInline]
