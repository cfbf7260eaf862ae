"""Who may see which site on the dashboard, and public read-only share links.

Staff and superusers see every site; any other user sees the sites granted to them with a
:class:`SiteAccess` row (Django admin, or ``manage.py dashboard_user``). A :class:`ShareLink`
opens the live and history views of one site to anyone holding its URL, read-only, until
it expires (30 days after it is issued, by default) or is revoked; like API keys, only a
SHA-256 of its random token is stored.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone as dj_timezone

from footfall import tokens
from footfall.models import Credential, Site

TOKEN_KIND = "fs"  # noqa: S105 - share links read fs_<prefix>_<random> (footfall.tokens), not a secret
DEFAULT_LIFETIME = timedelta(days=30)  # a link handed out and forgotten stops working by itself


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


class ShareLink(Credential):
    """A public, read-only link to one site's live and history views, until it expires or is revoked."""

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="share_links")
    label = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=16, unique=True)
    token_hash = models.CharField(max_length=64)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)

    def __str__(self) -> str:
        until = f", until {self.expires_at:%Y-%m-%d %H:%M} UTC" if self.expires_at and self.is_live() else ""
        return f"{self.site_id}:{self.label or 'share'} ({self.prefix}…, {self.state}{until})"

    @classmethod
    def issue(
        cls,
        site: Site,
        label: str = "",
        created_by: object = None,
        lifetime: timedelta | None = DEFAULT_LIFETIME,
    ) -> tuple[ShareLink, str]:
        """Create a link that expires after ``lifetime`` (None: never); return the row and its
        token (shown once, never stored)."""
        new = tokens.issue(TOKEN_KIND, 24)
        expires_at: datetime | None = dj_timezone.now() + lifetime if lifetime is not None else None
        row = cls.objects.create(
            site=site,
            label=label,
            prefix=new.prefix,
            token_hash=new.digest,
            created_by=created_by,
            expires_at=expires_at,
        )
        return row, new.token

    @classmethod
    def resolve(cls, token: str) -> ShareLink | None:
        """The live link of ``token``, or None (unknown, malformed, revoked or expired); a
        match records its use."""
        return cls._live_match(token, TOKEN_KIND, "token_hash")
