"""Who may see which site on the dashboard, and public read-only share links.

Staff and superusers see every site; any other user sees the sites granted to them with a
:class:`SiteAccess` row (Django admin, or ``manage.py dashboard_user``). A :class:`ShareLink`
opens the live and history views of one site to anyone holding its URL, read-only, until
it is revoked; like API keys, only a SHA-256 of its random token is stored.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone as dj_timezone

from footfall import tokens
from footfall.models import Site

TOKEN_KIND = "fs"  # noqa: S105 - share links read fs_<prefix>_<random> (footfall.tokens), not a secret


class SiteAccess(models.Model):
    """``user`` may read ``site`` on the dashboard."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="footfall_sites")
    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="dashboard_access")
    granted_at = models.DateTimeField(default=dj_timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "site"], name="dashboard_siteaccess_unique")]
        verbose_name_plural = "site access"

    def __str__(self) -> str:
        return f"{self.user} → {self.site_id}"


class ShareLink(models.Model):
    """A public, read-only link to one site's live and history views; revocable."""

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="share_links")
    label = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=16, unique=True)
    token_hash = models.CharField(max_length=64)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(default=dj_timezone.now)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        state = "revoked" if self.revoked_at else "live"
        return f"{self.site_id}:{self.label or 'share'} ({self.prefix}…, {state})"

    @classmethod
    def issue(cls, site: Site, label: str = "", created_by: object = None) -> tuple[ShareLink, str]:
        """Create a link; return the row and its token (shown once, never stored)."""
        new = tokens.issue(TOKEN_KIND, 24)
        row = cls.objects.create(
            site=site, label=label, prefix=new.prefix, token_hash=new.digest, created_by=created_by
        )
        return row, new.token

    @classmethod
    def resolve(cls, token: str) -> ShareLink | None:
        """The live link of ``token``, or None (unknown, malformed or revoked)."""
        prefix = tokens.prefix_of(token, TOKEN_KIND)
        if prefix is None:
            return None
        row = cls.objects.select_related("site").filter(prefix=prefix, revoked_at__isnull=True).first()
        if row is None or not tokens.matches(row.token_hash, token):
            return None
        return row

    def revoke(self) -> None:
        self.revoked_at = dj_timezone.now()
        self.save(update_fields=["revoked_at"])
