"""Admin for sites and API keys (keys are created with `manage.py create_api_key`, shown once)."""

from django.contrib import admin

from footfall.models import ApiKey, Site


@admin.register(Site)
class SiteAdmin(admin.ModelAdmin):
    list_display = ("site_id", "name", "timezone", "respect_dnt", "drop_bots", "created_at")
    search_fields = ("site_id", "name")


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ("prefix", "site", "name", "scopes", "created_at", "expires_at", "last_used_at", "revoked_at")
    list_filter = ("site",)
    readonly_fields = ("prefix", "key_hash", "created_at", "last_used_at")

    def has_add_permission(self, request: object) -> bool:
        return False  # the plaintext must be shown once; the command does that
