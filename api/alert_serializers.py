"""Shapes of the alert and report endpoints (:mod:`api.alert_views`): request bodies, which the
views validate with these serializers, and responses, which these only describe.

Ids are written as strings (as goal and funnel ids are) and accepted as integers.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from alerts.models import EMAIL, MONTHLY, RULE_KINDS, SPIKE_SCOPES, THRESHOLD_MEANING, WEBHOOK, WEEKLY

_THRESHOLDS = "; ".join(f"{kind}: {meaning}" for kind, meaning in THRESHOLD_MEANING.items())
# The largest value of the models' PositiveSmallIntegerField on every database Django supports.
_SMALL_MAX = 32767


class TextField(serializers.CharField):
    """A JSON string only: DRF's CharField would also take a number and write it as text."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


# Object ids are 64-bit integers on every database Django supports: a larger one is no id at all
# (and would overflow the database driver instead of failing validation).
_ID_MAX = 2**63 - 1


class RuleInputSerializer(serializers.Serializer):
    """A rule as created (every field) or changed (PATCH: any subset)."""

    name = TextField(max_length=100)
    kind = serializers.ChoiceField(choices=RULE_KINDS)
    threshold = serializers.FloatField(help_text=f"per kind: {_THRESHOLDS}")
    window_minutes = serializers.IntegerField(
        required=False, min_value=5, max_value=1440, help_text="spike, drop and goal rules (default 60)"
    )
    scope = serializers.ChoiceField(
        choices=SPIKE_SCOPES, required=False, allow_blank=True, help_text="spike rules: empty (the site), page or ref"
    )
    value = TextField(
        required=False, allow_blank=True, max_length=512, help_text="spike rules: one page path or referrer domain"
    )
    goal_id = serializers.IntegerField(
        required=False, allow_null=True, min_value=1, max_value=_ID_MAX, help_text="goal rules: a goal of the site"
    )
    max_per_day = serializers.IntegerField(
        required=False, min_value=0, max_value=_SMALL_MAX, help_text="episodes delivered per UTC day (default 3)"
    )
    channels = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=_ID_MAX),
        required=False,
        max_length=100,
        help_text="channel ids of the site",
    )
    enabled = serializers.BooleanField(required=False, help_text="default true")


class RuleSerializer(serializers.Serializer):
    rule_id = serializers.CharField()
    name = serializers.CharField()
    kind = serializers.ChoiceField(choices=RULE_KINDS)
    threshold = serializers.FloatField()
    threshold_meaning = serializers.CharField(help_text="what the threshold means for this kind")
    window_minutes = serializers.IntegerField()
    scope = serializers.ChoiceField(choices=SPIKE_SCOPES, allow_blank=True)
    value = serializers.CharField(allow_blank=True)
    goal_id = serializers.CharField(allow_null=True)
    max_per_day = serializers.IntegerField()
    channels = serializers.ListField(child=serializers.CharField(), help_text="channel ids")
    enabled = serializers.BooleanField()
    open_episode_id = serializers.CharField(allow_null=True, help_text="the episode open now, if any")
    created_at = serializers.DateTimeField()


class RuleListSerializer(serializers.Serializer):
    site_id = serializers.CharField()
    results = RuleSerializer(many=True)


class ChannelInputSerializer(serializers.Serializer):
    name = TextField(max_length=100)
    kind = serializers.ChoiceField(choices=[EMAIL, WEBHOOK])
    email = TextField(required=False, allow_blank=True, max_length=254, help_text="email channels: the recipient")
    url = TextField(required=False, allow_blank=True, max_length=2000, help_text="webhooks: an http(s) URL")
    slack = serializers.BooleanField(required=False, help_text="webhooks: a Slack-compatible body (default false)")
    enabled = serializers.BooleanField(required=False, help_text="default true")


class ChannelSerializer(serializers.Serializer):
    channel_id = serializers.CharField()
    name = serializers.CharField()
    kind = serializers.ChoiceField(choices=[EMAIL, WEBHOOK])
    email = serializers.CharField(allow_blank=True)
    url = serializers.CharField(allow_blank=True)
    slack = serializers.BooleanField()
    enabled = serializers.BooleanField()
    created_at = serializers.DateTimeField()


class CreatedChannelSerializer(ChannelSerializer):
    secret = serializers.CharField(
        allow_null=True,
        help_text="webhooks: the HMAC-SHA256 key of the signature header, shown this once (null for email)",
    )


class ChannelListSerializer(serializers.Serializer):
    site_id = serializers.CharField()
    results = ChannelSerializer(many=True)


class RankedSerializer(serializers.Serializer):
    value = serializers.CharField()
    visitors = serializers.IntegerField()


class SeriesPointSerializer(serializers.Serializer):
    t = serializers.CharField(help_text="ISO 8601, UTC")
    v = serializers.FloatField()


class EpisodeDetailsSerializer(serializers.Serializer):
    """What the check recorded when the episode opened; any key may be absent."""

    summary = serializers.CharField(required=False, help_text="one human sentence")
    metric = serializers.CharField(required=False, help_text="visitors, conversions, lag_s, lag_events, drift_pct, ...")
    value = serializers.FloatField(required=False)
    threshold = serializers.FloatField(required=False)
    window_minutes = serializers.IntegerField(required=False, allow_null=True)
    subject = serializers.CharField(required=False, help_text="site, a page path, a referrer, a goal or a day")
    top_referrers = RankedSerializer(many=True, required=False)
    top_pages = RankedSerializer(many=True, required=False)
    series = SeriesPointSerializer(many=True, required=False, help_text="what the notification's chart draws")
    dashboard_path = serializers.CharField(required=False)


class EpisodeSerializer(serializers.Serializer):
    episode_id = serializers.CharField()
    rule_id = serializers.CharField()
    rule_name = serializers.CharField()
    kind = serializers.ChoiceField(choices=RULE_KINDS)
    opened_at = serializers.DateTimeField()
    resolved_at = serializers.DateTimeField(allow_null=True, help_text="null while the episode is open")
    value = serializers.FloatField(help_text="the figure measured when the episode opened")
    peak = serializers.FloatField(help_text="the furthest past the threshold while it lasted")
    suppressed = serializers.BooleanField(help_text="over the rule's daily limit: recorded, not delivered")
    details = EpisodeDetailsSerializer()


class EpisodeListSerializer(serializers.Serializer):
    site_id = serializers.CharField()
    results = EpisodeSerializer(many=True)
    page = serializers.IntegerField()
    limit = serializers.IntegerField()
    total = serializers.IntegerField(help_text="number of matching episodes over all pages")


class SubscriptionInputSerializer(serializers.Serializer):
    email = TextField(max_length=254)
    frequency = serializers.ChoiceField(
        choices=[WEEKLY, MONTHLY], help_text="weekly (sent Mondays) or monthly (sent on the 1st)"
    )


class SubscriptionSerializer(serializers.Serializer):
    subscription_id = serializers.CharField()
    email = serializers.CharField()
    frequency = serializers.ChoiceField(choices=[WEEKLY, MONTHLY])
    created_at = serializers.DateTimeField()
    unsubscribed_at = serializers.DateTimeField(allow_null=True, help_text="set when the recipient unsubscribed")
    last_period = serializers.CharField(allow_blank=True, help_text="the last period sent, e.g. 2026-W47 or 2026-11")


class SubscriptionListSerializer(serializers.Serializer):
    site_id = serializers.CharField()
    results = SubscriptionSerializer(many=True)


class RotatedSecretSerializer(serializers.Serializer):
    channel_id = serializers.CharField()
    secret = serializers.CharField(help_text="the new HMAC-SHA256 key: shown once")
    previous_valid_until = serializers.DateTimeField(help_text="until then requests are also signed with the old key")
