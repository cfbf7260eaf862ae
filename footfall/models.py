"""Sites that may send events, their credentials (API keys, stored hashed and shown once),
and their goals and funnels.

The collector, the API, the dashboard and the rollups all read these, so they live in the
core app (label ``footfall_core``) rather than in any one of them.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Self
from zoneinfo import available_timezones

from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models, transaction
from django.db.models import Q
from django.utils import timezone as dj_timezone

from footfall import tokens
from footfall.goals import EVENT, MAX_FUNNEL_STEPS, PAGE, DefinitionError, FunnelSpec, GoalSpec
from footfall_capture.query_params import site_query_params
from footfall_capture.salt_days import SALT_POLICIES

# ingest:any-host lets an ingest key send events whose page URL is on none of the site's
# domains (a proxy, a staging host); without it the batch API checks them like a beacon.
ANY_HOST_SCOPE = "ingest:any-host"
# manage lets a key create and delete the site's goals and funnels through the API.
MANAGE_SCOPE = "manage"
# export lets a key download the site's raw events (GET /api/v1/sites/<site>/export): every
# event in full, more than read's aggregates, so it is a scope of its own.
EXPORT_SCOPE = "export"
SCOPES = ("read", "ingest", ANY_HOST_SCOPE, MANAGE_SCOPE, EXPORT_SCOPE)
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


def validate_query_params(value: object) -> None:
    if not isinstance(value, list):
        raise ValidationError("expected a list of query parameter names such as ['page', 'q']")
    try:
        site_query_params(value)
    except ValueError as exc:
        raise ValidationError(str(exc)) from None


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
    query_params = models.JSONField(
        default=list,
        blank=True,
        validators=[validate_query_params],
        help_text="Query parameters kept in page URLs besides ref and source (utm_* become the campaign "
        "fields); every other parameter is dropped before the event is stored.",
    )
    imports_win = models.BooleanField(
        default=False,
        db_default=False,  # rows written without it (older code during an upgrade) say False too
        help_text="On a day both imported history and Footfall's own rollup hold, answer from the import "
        "(by default Footfall's own figures win).",
    )
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


MAX_GOALS_PER_SITE = 100
MAX_FUNNELS_PER_SITE = 50


class Goal(models.Model):
    """A conversion a site counts: a page view whose path matches ``path`` (``*`` wildcards),
    or a custom event named ``event``, optionally only when its property ``prop`` equals
    ``value`` (see :mod:`footfall.goals`)."""

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="goals")
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=10, choices=[(PAGE, "page view"), (EVENT, "custom event")])
    path = models.CharField(
        max_length=512, blank=True, help_text="Page goals: a path pattern; * matches anything, e.g. /blog/*."
    )
    event = models.CharField(max_length=64, blank=True, help_text="Event goals: the event name, e.g. signup.")
    prop = models.CharField(max_length=64, blank=True, help_text="Event goals, optional: a property name.")
    value = models.CharField(max_length=512, blank=True, help_text="The value the property must have.")
    revenue_prop = models.CharField(
        max_length=64,
        blank=True,
        default="",
        db_default="",
        help_text="Event goals, optional: the property holding the amount.",
    )
    currency_prop = models.CharField(
        max_length=64,
        blank=True,
        default="",
        db_default="",
        help_text="With revenue: the property holding the currency code.",
    )
    currency = models.CharField(
        max_length=3,
        blank=True,
        default="",
        db_default="",
        help_text="With revenue, instead: one fixed currency, e.g. EUR.",
    )
    created_at = models.DateTimeField(default=dj_timezone.now)

    class Meta:
        ordering = ["site_id", "id"]
        constraints = [models.UniqueConstraint(fields=["site", "name"], name="goal_name_unique_per_site")]

    def __str__(self) -> str:
        return f"{self.site_id}: {self.name}"

    def spec(self) -> GoalSpec:
        """The goal as every layer matches it; raises :class:`DefinitionError` when invalid."""
        return GoalSpec(
            str(self.pk or ""), self.kind, self.name, self.path, self.event, self.prop, self.value,  # type: ignore[arg-type]
            self.revenue_prop, self.currency_prop, self.currency,
        )  # fmt: skip

    def clean(self) -> None:
        try:
            self.spec()
        except DefinitionError as err:
            raise ValidationError({err.field: str(err).split(": ", 1)[1]}) from None
        if self.kind == PAGE and (self.event or self.prop or self.value or self.revenue_prop):
            raise ValidationError({"event": "a page goal has a path, no event or property"})
        if self.kind == EVENT and self.path:
            raise ValidationError({"path": "an event goal has an event name, no path"})
        if self._state.adding and Goal.objects.filter(site_id=self.site_id).count() >= MAX_GOALS_PER_SITE:
            raise ValidationError(f"a site has at most {MAX_GOALS_PER_SITE} goals")

    @classmethod
    def specs_by_site(cls, site_ids: list[str] | None = None) -> dict[str, list[GoalSpec]]:
        """The goals of the given sites (all when None), as specs, per site id."""
        rows = cls.objects.all() if site_ids is None else cls.objects.filter(site_id__in=site_ids)
        out: dict[str, list[GoalSpec]] = {}
        for goal in rows.order_by("site_id", "id"):
            out.setdefault(goal.site_id, []).append(goal.spec())
        return out


class Funnel(models.Model):
    """Goals reached in order by one visitor: within one session (``window_minutes`` 0) or
    within that many minutes of the first step; ``strict``: nothing else in between."""

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="funnels")
    name = models.CharField(max_length=100)
    window_minutes = models.PositiveIntegerField(
        default=0, help_text="0: the steps must happen in one session; else within this many minutes of the first."
    )
    strict = models.BooleanField(default=False, help_text="No other page view or event between two steps.")
    created_at = models.DateTimeField(default=dj_timezone.now)

    class Meta:
        ordering = ["site_id", "id"]
        constraints = [models.UniqueConstraint(fields=["site", "name"], name="funnel_name_unique_per_site")]

    def __str__(self) -> str:
        return f"{self.site_id}: {self.name}"

    def spec(self) -> FunnelSpec:
        """The funnel as the layers compute it; raises :class:`DefinitionError` when invalid."""
        goals = tuple(step.goal.spec() for step in self.steps.select_related("goal").order_by("position"))
        return FunnelSpec(str(self.pk or ""), goals, self.name, self.window_minutes, self.strict)

    @classmethod
    @transaction.atomic
    def create(cls, site: Site, name: str, goal_ids: list[int], window_minutes: int = 0, strict: bool = False) -> Self:
        """A new funnel of ``site`` whose steps are the site's goals ``goal_ids`` in order;
        raises :class:`ValidationError` naming the field at fault (nothing is saved then)."""
        goals = {g.pk: g for g in Goal.objects.filter(site=site, pk__in=goal_ids)}
        unknown = [g for g in goal_ids if g not in goals]
        if unknown:
            raise ValidationError({"steps": f"not goals of site {site.site_id}: {unknown}"})
        if cls.objects.filter(site=site).count() >= MAX_FUNNELS_PER_SITE:
            raise ValidationError(f"a site has at most {MAX_FUNNELS_PER_SITE} funnels")
        funnel = cls(site=site, name=name, window_minutes=window_minutes, strict=strict)
        try:
            FunnelSpec("", tuple(goals[g].spec() for g in goal_ids), name, window_minutes, strict)
        except DefinitionError as err:
            raise ValidationError({err.field: str(err).split(": ", 1)[1]}) from None
        funnel.full_clean()
        funnel.save()
        FunnelStep.objects.bulk_create(
            FunnelStep(funnel=funnel, position=i, goal=goals[g]) for i, g in enumerate(goal_ids)
        )
        return funnel

    @classmethod
    def specs_by_site(cls, site_ids: list[str] | None = None) -> dict[str, list[FunnelSpec]]:
        """The funnels of the given sites (all when None), as specs, per site id."""
        rows = cls.objects.all() if site_ids is None else cls.objects.filter(site_id__in=site_ids)
        out: dict[str, list[FunnelSpec]] = {}
        for funnel in rows.prefetch_related("steps__goal").order_by("site_id", "id"):
            steps = sorted(funnel.steps.all(), key=lambda s: s.position)
            spec = FunnelSpec(str(funnel.pk), tuple(s.goal.spec() for s in steps), funnel.name,
                              funnel.window_minutes, funnel.strict)  # fmt: skip
            out.setdefault(funnel.site_id, []).append(spec)
        return out


class FunnelStep(models.Model):
    """Step ``position`` (from 0) of a funnel: one of the site's goals."""

    funnel = models.ForeignKey(Funnel, on_delete=models.CASCADE, related_name="steps")
    position = models.PositiveSmallIntegerField()
    # PROTECT: deleting a goal must not silently reshape the funnels that use it.
    goal = models.ForeignKey(Goal, on_delete=models.PROTECT, related_name="funnel_steps")

    class Meta:
        ordering = ["funnel_id", "position"]
        constraints = [models.UniqueConstraint(fields=["funnel", "position"], name="funnel_step_position_unique")]

    def clean(self) -> None:
        if self.goal_id and self.funnel_id and self.goal.site_id != self.funnel.site_id:
            raise ValidationError({"goal": "a funnel's steps are goals of its own site"})
        if self.position >= MAX_FUNNEL_STEPS:
            raise ValidationError({"position": f"a funnel has at most {MAX_FUNNEL_STEPS} steps"})
