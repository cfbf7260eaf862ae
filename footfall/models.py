"""Sites that may send events, and their API keys (stored hashed, shown once).

The collector, the API, the dashboard and the rollups all read these, so they live in the
core app (label ``footfall_core``) rather than in any one of them.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Self
from zoneinfo import available_timezones

from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone as dj_timezone

from footfall import tokens
from footfall_capture.salts import SALT_POLICIES

# ingest:any-host lets an ingest key send events whose page URL is on none of the site's
# domains (a proxy, a staging host); without it the batch API checks them like a beacon.
ANY_HOST_SCOPE = "ingest:any-host"
SCOPES = ("read", "ingest", ANY_HOST_SCOPE)
KEY_KIND = "ff"  # API keys read ff_<prefix>_<random> (footfall.tokens)


def validate_timezone(value: str) -> None:
    if value not in available_timezones():
        raise ValidationError(f"{value!r} is not an IANA time zone name (e.g. Europe/Berlin)")


def validate_host_list(value: object) -> None:
    if not isinstance(value, list) or not all(isinstance(v, str) and v and "/" not in v for v in value):
        raise ValidationError("expected a list of host names such as ['example.com', 'www.example.com']")


def validate_origin_list(value: object) -> None:
    if not isinstance(value, list) or not all(
        isinstance(v, str) and v.startswith(("http://", "https://")) and v.count("/") == 2 for v in value
    ):
        raise ValidationError("expected a list of origins such as ['https://example.com']")


class Site(models.Model):
    """A web site whose traffic Footfall records."""

    site_id = models.CharField(
        primary_key=True,
        max_length=64,
        validators=[RegexValidator(r"^[a-z0-9][a-z0-9_\-]{0,63}$", "lower-case letters, digits, '-' and '_'")],
    )
    name = models.CharField(max_length=200)
    domains = models.JSONField(
        default=list,
        validators=[validate_host_list],
        help_text="The site's host names: only pages on them (or their subdomains) may send events, "
        "and referrers from them count as internal. Empty: any page.",
    )
    allowed_origins = models.JSONField(
        default=list,
        blank=True,
        validators=[validate_origin_list],
        help_text="Origins allowed to send beacons; empty means https:// and http:// of each domain.",
    )
    timezone = models.CharField(max_length=64, default="UTC", validators=[validate_timezone])
    salt_policy = models.CharField(
        max_length=20, default="daily", choices=[(p, p) for p in SALT_POLICIES],
        help_text="daily: visitor ids rotate at midnight UTC; daily_site_tz: at midnight in the site's time zone.",
    )  # fmt: skip
    respect_dnt = models.BooleanField(default=True, help_text="Drop events from browsers sending DNT or Sec-GPC.")
    drop_bots = models.BooleanField(default=False, help_text="Drop crawler traffic instead of recording it flagged.")
    created_at = models.DateTimeField(default=dj_timezone.now)

    class Meta:
        ordering = ["site_id"]

    def __str__(self) -> str:
        return self.site_id

    def origins(self) -> frozenset[str]:
        """Origins allowed to send beacons for this site."""
        if self.allowed_origins:
            return frozenset(o.lower().rstrip("/") for o in self.allowed_origins)
        return frozenset(f"{scheme}://{d.lower()}" for d in self.domains for scheme in ("https", "http"))


LAST_USED_RESOLUTION = timedelta(minutes=1)  # last-used times are this coarse: no write per request


class Credential(models.Model):
    """What API keys and share links share: revocation, an optional expiry and a last-used time.

    A credential is live until it is revoked or its ``expires_at`` passes; either way it is
    refused the same.
    """

    created_at = models.DateTimeField(default=dj_timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="Refused from this time on; empty: never.")
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        abstract = True

    @staticmethod
    def live_q(now: datetime | None = None) -> Q:
        """The filter of live credentials at ``now`` (default: the current time)."""
        now = now or dj_timezone.now()
        return Q(revoked_at__isnull=True) & (Q(expires_at__isnull=True) | Q(expires_at__gt=now))

    @classmethod
    def live(cls) -> models.QuerySet[Self]:
        return cls.objects.filter(cls.live_q())

    def is_live(self, now: datetime | None = None) -> bool:
        now = now or dj_timezone.now()
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)

    @property
    def state(self) -> str:
        """``live``, ``revoked`` or ``expired``, for listings."""
        if self.revoked_at is not None:
            return "revoked"
        return "live" if self.is_live() else "expired"

    @classmethod
    def _live_match(cls, secret: str, kind: str, digest_field: str) -> Self | None:
        """The live row whose prefix and digest (``digest_field``) match ``secret``, a token
        of ``kind``, or None; a match records its use."""
        prefix = tokens.prefix_of(secret, kind)
        if prefix is None:
            return None
        row = cls.objects.select_related("site").filter(cls.live_q(), prefix=prefix).first()
        if row is None or not tokens.matches(getattr(row, digest_field), secret):
            return None
        row.note_use()
        return row

    def note_use(self) -> None:
        """Record that the credential was just used, at most once per :data:`LAST_USED_RESOLUTION`.

        An ``update`` rather than ``save``: no signals, so caches of verified keys stay warm.
        """
        now = dj_timezone.now()
        if self.last_used_at is not None and now - self.last_used_at < LAST_USED_RESOLUTION:
            return
        type(self).objects.filter(pk=self.pk).update(last_used_at=now)
        self.last_used_at = now

    def revoke(self) -> None:
        self.revoked_at = dj_timezone.now()
        self.save(update_fields=["revoked_at"])


class ApiKey(Credential):
    """An API key of one site. Only a SHA-256 of the key is stored; the key is shown once.

    Keys are 32 random bytes, so a fast hash is safe (no dictionary to attack); the lookup
    goes by the public prefix and the hash is compared in constant time.
    """

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, unique=True)
    key_hash = models.CharField(max_length=64)
    scopes = models.JSONField(default=list)

    def __str__(self) -> str:
        return f"{self.site_id}:{self.name} ({self.prefix}…)"

    @classmethod
    def issue(cls, site: Site, name: str, scopes: list[str], expires_at: datetime | None = None) -> tuple[ApiKey, str]:
        """Create a key (no expiry unless ``expires_at``); return the row and the plaintext key (never stored)."""
        bad = set(scopes) - set(SCOPES)
        if bad or not scopes:
            raise ValueError(f"scopes must be a non-empty subset of {SCOPES}, got {scopes}")
        new = tokens.issue(KEY_KIND, 32)
        row = cls.objects.create(
            site=site, name=name, prefix=new.prefix, key_hash=new.digest, scopes=sorted(scopes), expires_at=expires_at
        )
        return row, new.token

    @classmethod
    def authenticate(cls, key: str) -> ApiKey | None:
        """The live key matching ``key``, or None (unknown, malformed, revoked or expired);
        a match records its use (:meth:`Credential.note_use`)."""
        return cls._live_match(key, KEY_KIND, "key_hash")
