"""Alert rules, the channels they deliver to, their episodes, every delivery attempt's record,
and report subscriptions.

A rule is checked from Celery (never in a request thread) against figures read through the
query layer. It *opens* an episode when its condition starts to hold and *resolves* it when
the condition clears; one episode is one notification, however long the condition lasts, and
at most ``max_per_day`` episodes a day (UTC) of one rule are delivered: the rest are recorded
as ``suppressed``.
"""

from __future__ import annotations

import datetime as dt
import secrets
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.utils import timezone as dj_timezone

from alerts.egress import literal_refusal
from footfall.models import Goal, Site

SPIKE, DROP, GOAL, REALTIME_LAG, ARCHIVER_LAG, ROLLUP, DRIFT = (
    "spike", "drop", "goal", "realtime_lag", "archiver_lag", "rollup", "drift",
)  # fmt: skip
RULE_KINDS = [
    (SPIKE, "traffic spike"),
    (DROP, "traffic drop"),
    (GOAL, "goal conversions below a level"),
    (REALTIME_LAG, "realtime lag"),
    (ARCHIVER_LAG, "archiver lag"),
    (ROLLUP, "nightly rollup failed or late"),
    (DRIFT, "realtime-vs-batch drift"),
]
# What ``threshold`` means for each kind (shown in the admin, the API and the dashboard form).
THRESHOLD_MEANING = {
    SPIKE: "z-score of the last window against the same blocks of the hours before (e.g. 3)",
    DROP: "share of the usual visitors for this hour of the week, 0-1 (e.g. 0.5: half)",
    GOAL: "conversions over the window below which the rule fires",
    REALTIME_LAG: "seconds the speed layer may lag behind the log",
    ARCHIVER_LAG: "events the archiver may lag behind the log",
    ROLLUP: "hours after a day ends (in the site's zone) by which its rollup must be complete",
    DRIFT: "percent of realtime-vs-batch drift of a settled day",
}
SITE, PAGE, REFERRER = "", "page", "ref"
SPIKE_SCOPES = [
    (SITE, "the whole site"),
    (PAGE, "any page, or the one named"),
    (REFERRER, "any referrer, or the one named"),
]

EMAIL, WEBHOOK = "email", "webhook"
WEEKLY, MONTHLY = "weekly", "monthly"


SECRET_OVERLAP = dt.timedelta(days=7)  # how long a rotated webhook secret keeps signing


def new_secret() -> str:
    return secrets.token_urlsafe(32)


def webhook_target(url: str) -> str:
    """A webhook's URL without its path and query, which may carry its credential."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}/…" if parts.scheme and parts.hostname else "(hidden)"


class Channel(models.Model):
    """Where a site's alerts go: an email address, or a webhook endpoint whose requests are
    signed with HMAC-SHA256 under ``secret`` (kept in clear: signing needs it)."""

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="alert_channels")
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=10, choices=[(EMAIL, "email"), (WEBHOOK, "webhook")])
    email = models.EmailField(blank=True, help_text="Email channels: the recipient.")
    url = models.URLField(max_length=2000, blank=True, help_text="Webhook channels: the endpoint (http or https).")
    secret = models.CharField(max_length=64, default=new_secret, help_text="Webhooks: the HMAC-SHA256 key.")
    # After a rotation, requests are signed under the old key too until then (receivers switch over).
    previous_secret = models.CharField(max_length=64, blank=True, default="")
    previous_secret_until = models.DateTimeField(null=True, blank=True)
    slack = models.BooleanField(default=False, help_text="Webhooks: send a Slack-compatible body.")
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=dj_timezone.now)

    class Meta:
        ordering = ["site_id", "id"]
        constraints = [models.UniqueConstraint(fields=["site", "name"], name="channel_name_unique_per_site")]

    def __str__(self) -> str:
        return f"{self.site_id}: {self.name}"

    def rotate_secret(self, overlap: dt.timedelta = SECRET_OVERLAP) -> str:
        """Replace the webhook's secret (saved); the old one keeps signing too for ``overlap``.
        The new secret is returned, to be shown once."""
        self.previous_secret, self.previous_secret_until = self.secret, dj_timezone.now() + overlap
        self.secret = new_secret()
        self.save(update_fields=["secret", "previous_secret", "previous_secret_until"])
        return self.secret

    def signing_secrets(self, now: float) -> list[str]:
        """The secrets a request sent at ``now`` (unix seconds) is signed under: the channel's,
        then the previous one while its overlap lasts."""
        until = self.previous_secret_until
        if self.previous_secret and until is not None and now < until.timestamp():
            return [self.secret, self.previous_secret]
        return [self.secret]

    @property
    def url_shown(self) -> str:
        """The webhook's URL as any reader may see it: scheme and host only, as its path and query
        may be its credential (a Slack incoming webhook's are); "" for an email channel."""
        return webhook_target(self.url) if self.url else ""

    def clean(self) -> None:
        if self.kind == EMAIL and (not self.email or self.url):
            raise ValidationError({"email": "an email channel has a recipient address and no URL"})
        if self.kind == WEBHOOK and (not self.url.startswith(("http://", "https://")) or self.email):
            raise ValidationError({"url": "a webhook channel has an http(s) URL and no email address"})
        if self.slack and self.kind != WEBHOOK:
            raise ValidationError({"slack": "only a webhook can send a Slack body"})
        networks = settings.ALERT_WEBHOOK_ALLOWED_NETWORKS
        refused = None if self.kind != WEBHOOK or networks is None else literal_refusal(self.url, networks)
        if refused is not None:  # a name is checked when sending: its DNS answer can change
            raise ValidationError({"url": str(refused)})


class AlertRule(models.Model):
    """One condition watched for a site (see :data:`THRESHOLD_MEANING` for ``threshold``)."""

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="alert_rules")
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=20, choices=RULE_KINDS)
    threshold = models.FloatField()
    window_minutes = models.PositiveIntegerField(
        default=60, help_text="Spike, drop and goal rules: the window the figure covers, 5 to 1440 minutes."
    )
    scope = models.CharField(max_length=10, blank=True, default=SITE, choices=SPIKE_SCOPES)
    value = models.CharField(max_length=512, blank=True, help_text="Spike rules: one page path or referrer domain.")
    goal = models.ForeignKey(Goal, null=True, blank=True, on_delete=models.CASCADE, related_name="alert_rules")
    max_per_day = models.PositiveSmallIntegerField(default=3, help_text="Episodes delivered per day (UTC) at most.")
    channels = models.ManyToManyField(Channel, blank=True, related_name="rules")
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=dj_timezone.now)

    class Meta:
        ordering = ["site_id", "id"]
        constraints = [models.UniqueConstraint(fields=["site", "name"], name="rule_name_unique_per_site")]

    def __str__(self) -> str:
        return f"{self.site_id}: {self.name}"

    def clean(self) -> None:
        errors: dict[str, str] = {}
        if not 5 <= self.window_minutes <= 1440:
            errors["window_minutes"] = "between 5 and 1440 minutes"
        if self.threshold is None or self.threshold < 0:
            errors["threshold"] = "a number of at least 0: " + THRESHOLD_MEANING.get(self.kind, "")
        elif self.kind == DROP and not 0 < self.threshold < 1:
            errors["threshold"] = "a share between 0 and 1 (exclusive) of the usual visitors"
        if self.kind == GOAL and self.goal_id is None:
            errors["goal"] = "a goal rule names one of the site's goals"
        if self.goal_id is not None and (self.kind != GOAL or self.goal.site_id != self.site_id):
            errors["goal"] = "only a goal rule names a goal, one of the same site"
        if (self.scope or self.value) and self.kind != SPIKE:
            errors["scope"] = "only a spike rule has a scope"
        if self.value and not self.scope:
            errors["value"] = "a value needs the page or referrer scope"
        if errors:
            raise ValidationError(errors)


class Episode(models.Model):
    """One stretch of time during which a rule's condition held: opened, then resolved."""

    rule = models.ForeignKey(AlertRule, on_delete=models.CASCADE, related_name="episodes")
    opened_at = models.DateTimeField()
    resolved_at = models.DateTimeField(null=True, blank=True)
    value = models.FloatField(help_text="The figure measured when the episode opened.")
    peak = models.FloatField(help_text="The furthest past the threshold while it lasted.")
    details = models.JSONField(default=dict, help_text="What the notification showed (top pages, referrers, ...).")
    suppressed = models.BooleanField(default=False, help_text="Over the rule's daily limit: recorded, not delivered.")

    class Meta:
        ordering = ["-opened_at"]
        constraints = [
            models.UniqueConstraint(fields=["rule"], condition=Q(resolved_at__isnull=True), name="one_open_episode")
        ]

    def __str__(self) -> str:
        return f"{self.rule}: {self.opened_at:%Y-%m-%d %H:%M}"


class ReportSubscription(models.Model):
    """A recipient of a site's weekly (Mondays) or monthly (the 1st) email report."""

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="report_subscriptions")
    email = models.EmailField()
    frequency = models.CharField(max_length=10, choices=[(WEEKLY, "weekly"), (MONTHLY, "monthly")])
    created_at = models.DateTimeField(default=dj_timezone.now)
    unsubscribed_at = models.DateTimeField(null=True, blank=True)
    last_period = models.CharField(
        max_length=16, blank=True, editable=False, help_text="The last period sent, e.g. 2026-W47 or 2026-11."
    )

    class Meta:
        ordering = ["site_id", "id"]
        constraints = [
            models.UniqueConstraint(fields=["site", "email", "frequency"], name="one_subscription_per_recipient")
        ]

    def __str__(self) -> str:
        return f"{self.site_id}: {self.email} ({self.frequency})"


class Delivery(models.Model):
    """One message to one channel or recipient, with every attempt's outcome (the delivery log)."""

    PENDING, SENT, FAILED = "pending", "sent", "failed"
    OPENED, RESOLVED, REPORT = "opened", "resolved", "report"

    channel = models.ForeignKey(Channel, null=True, blank=True, on_delete=models.CASCADE, related_name="deliveries")
    subscription = models.ForeignKey(
        ReportSubscription, null=True, blank=True, on_delete=models.CASCADE, related_name="deliveries"
    )
    episode = models.ForeignKey(Episode, null=True, blank=True, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=10, choices=[(OPENED, "opened"), (RESOLVED, "resolved"), (REPORT, "report")])
    period = models.CharField(max_length=16, blank=True, help_text="Reports: the period, e.g. 2026-W47.")
    status = models.CharField(
        max_length=10, default=PENDING, choices=[(PENDING, "pending"), (SENT, "sent"), (FAILED, "failed")]
    )
    attempts = models.PositiveSmallIntegerField(default=0)
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=dj_timezone.now)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "deliveries"
        constraints = [
            # One message per episode event and channel, one report per period and recipient:
            # a task run twice (acks late, redelivery) never sends twice.
            models.UniqueConstraint(fields=["episode", "event", "channel"], name="one_delivery_per_episode_event"),
            models.UniqueConstraint(fields=["subscription", "period"], name="one_report_per_period"),
        ]

    def __str__(self) -> str:
        return f"{self.event} → {self.channel or self.subscription}: {self.status}"
