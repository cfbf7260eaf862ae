"""Admin for dashboard access grants and share links (links are created with
``manage.py share_link``, which shows the token once; the admin can revoke them)."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from dashboard.models import ShareLink, SiteAccess


@admin.register(SiteAccess)
class SiteAccessAdmin(admin.ModelAdmin):
    list_display = ("user", "site", "granted_at")
    list_filter = ("site",)
    search_fields = ("user__username", "site__site_id")


@admin.register(ShareLink)
class ShareLinkAdmin(admin.ModelAdmin):
    list_display = ("prefix", "site", "label", "created_by", "created_at", "expires_at", "last_used_at", "revoked_at")
    list_filter = ("site",)
    readonly_fields = ("prefix", "token_hash", "created_at", "created_by", "last_used_at")
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # the token must be shown once; the command does that

    @admin.action(description="Revoke the selected share links")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ShareLink]) -> None:
        queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
