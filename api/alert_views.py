"""Alert rules, their channels and episodes, and report subscriptions of a site through the API.

Reading needs a key with the ``read`` scope; creating, changing and deleting one with ``manage``
(:data:`footfall.models.MANAGE_SCOPE`). Bodies are typed by :mod:`api.alert_serializers` and
then validated by the models (``full_clean``): a refused one is a 400 naming the field at fault.
Every object is looked up within the key's site, so another site's id is a 404, as an unknown
one is. A webhook channel's secret is returned once, by the request that creates it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar
from zoneinfo import ZoneInfo

from django.core.exceptions import ValidationError
from django.db import IntegrityError, models, transaction
from django.db.models import Prefetch, Q
from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from alerts.models import THRESHOLD_MEANING, WEBHOOK, AlertRule, Channel, Episode, ReportSubscription
from alerts.site_alerts import NotInSite, site_channels, site_goal
from api import alert_serializers as a
from api.errors import validated
from api.goal_views import MANAGE_ERRORS, require_manage
from api.views import ERRORS, LIMIT, PAGE, SITE, TZ, SiteView
from footfall.vocabulary import QueryError
from query import params as p

# Years ``from`` and ``to`` of the episodes may name: every episode's, and far from year 1 and
# 9999, where a zone's offset overflows Python's datetime (a 500, not a 400).
EARLIEST, LATEST = 2000, 2999
M = TypeVar("M", bound=models.Model)
RULE_ID = OpenApiParameter("rule_id", OpenApiTypes.INT, OpenApiParameter.PATH)
CHANNEL_ID = OpenApiParameter("channel_id", OpenApiTypes.INT, OpenApiParameter.PATH)
SUBSCRIPTION_ID = OpenApiParameter("subscription_id", OpenApiTypes.INT, OpenApiParameter.PATH)
# Model fields named otherwise in the API, so an error names what the caller sent.
API_NAMES = {"goal": "goal_id"}


def saved(obj: M, clash: tuple[str, str], after_save: Callable[[M], None] | None = None) -> M:
    """``obj`` validated by its model and saved, then ``after_save(obj)`` (e.g. its many-to-many
    rows), in one transaction. A validation error is a 400 naming the API's field; a unique
    constraint hit is the 400 ``clash`` (field, message)."""
    try:
        with transaction.atomic():
            # Constraints are left to the database: its refusal is the one answer to a name
            # taken, whether by an earlier request or by a concurrent one.
            obj.full_clean(validate_constraints=False)
            obj.save()
            if after_save is not None:
                after_save(obj)
    except ValidationError as err:
        field, errors = next(iter(err.error_dict.items())) if hasattr(err, "error_dict") else ("__all__", [err])
        message = "; ".join(e.messages[0] for e in errors)
        raise QueryError("body" if field == "__all__" else API_NAMES.get(field, field), message) from None
    except IntegrityError:
        raise QueryError(*clash) from None
    return obj


def one(queryset: models.QuerySet[M], pk: int, what: str) -> M:
    """The object ``pk`` of ``queryset`` (already limited to the key's site), else a 404."""
    obj = queryset.filter(pk=pk).first()
    if obj is None:
        raise Http404(f"no such {what}")
    return obj


def _listed(site_id: str, rows: Iterable[Any], to_json: Callable[[Any], dict[str, object]]) -> Response:
    return Response({"site_id": site_id, "results": [to_json(r) for r in rows]})


def _iso(moment: Any) -> str | None:
    return moment.isoformat() if moment is not None else None


# -- rules -------------------------------------------------------------------------------------


def _rules(site_id: str) -> models.QuerySet[AlertRule]:
    """The site's rules with what :func:`_rule_json` writes, in three queries for any number."""
    open_episodes = Episode.objects.filter(resolved_at__isnull=True).only("id", "rule_id")
    return AlertRule.objects.filter(site_id=site_id).prefetch_related(
        Prefetch("channels", queryset=Channel.objects.only("id")),
        Prefetch("episodes", queryset=open_episodes, to_attr="open_episodes"),
    )


def _rule_json(rule: AlertRule) -> dict[str, object]:
    """``rule`` as the API writes it; ``rule`` comes from :func:`_rules` (channels and open episode prefetched)."""
    open_episodes = rule.open_episodes
    return {
        "rule_id": str(rule.pk), "name": rule.name, "kind": rule.kind, "threshold": rule.threshold,
        "threshold_meaning": THRESHOLD_MEANING[rule.kind], "window_minutes": rule.window_minutes,
        "scope": rule.scope, "value": rule.value, "goal_id": str(rule.goal_id) if rule.goal_id else None,
        "max_per_day": rule.max_per_day, "channels": sorted((str(c.pk) for c in rule.channels.all()), key=int),
        "enabled": rule.enabled, "open_episode_id": str(open_episodes[0].pk) if open_episodes else None,
        "created_at": _iso(rule.created_at),
    }  # fmt: skip


def _apply_rule_fields(rule: AlertRule, fields: dict[str, Any]) -> list[Channel] | None:
    """Set ``fields`` (validated input) on ``rule``, resolving the goal and channel ids within
    the rule's site; returns the channels to set once saved (None: leave them)."""
    if "goal_id" in fields:
        try:
            rule.goal = site_goal(rule.site_id, fields.pop("goal_id"))
        except NotInSite:
            raise QueryError("goal_id", "no goal of this site has that id") from None
    channels = None
    if "channels" in fields:
        try:
            channels = site_channels(rule.site_id, fields.pop("channels"))
        except NotInSite as exc:
            raise QueryError("channels", str(exc)) from None
    for name, value in fields.items():
        setattr(rule, name, value)
    return channels


def _rule_saved(rule: AlertRule, channels: list[Channel] | None) -> AlertRule:
    def set_channels(saved_rule: AlertRule) -> None:
        if channels is not None:
            saved_rule.channels.set(channels)

    saved(rule, ("name", "this site already has a rule of that name"), set_channels)
    return _rules(rule.site_id).get(pk=rule.pk)


class RulesView(SiteView):
    @extend_schema(
        summary="The site's alert rules",
        operation_id="sites_alerts_rules_list",
        parameters=[SITE],
        responses={200: a.RuleListSerializer, **ERRORS},
    )
    def get(self, request: Request, site_id: str) -> Response:
        return _listed(site_id, _rules(site_id), _rule_json)

    @extend_schema(
        summary="Create an alert rule",
        description=(
            "`kind`: spike, drop, goal (with `goal_id`), realtime_lag, archiver_lag, rollup or drift; what "
            "`threshold` means depends on it (see the field). Spike rules may watch a `scope` (page or ref) "
            "and one `value` of it. `channels`: ids of the site's channels to notify. A rule fires once per "
            "episode and at most `max_per_day` times per UTC day. Needs a key with the manage scope."
        ),
        operation_id="sites_alerts_rules_create",
        parameters=[SITE],
        request=a.RuleInputSerializer,
        responses={201: a.RuleSerializer, **MANAGE_ERRORS},
    )
    def post(self, request: Request, site_id: str) -> Response:
        require_manage(request)
        fields = validated(a.RuleInputSerializer, request.data)
        rule = AlertRule(site_id=site_id)
        channels = _apply_rule_fields(rule, fields)
        return Response(_rule_json(_rule_saved(rule, channels)), status=201)


class RuleView(SiteView):
    @extend_schema(
        summary="An alert rule",
        operation_id="sites_alerts_rules_retrieve",
        parameters=[SITE, RULE_ID],
        responses={200: a.RuleSerializer, **ERRORS},
    )
    def get(self, request: Request, site_id: str, rule_id: int) -> Response:
        return Response(_rule_json(one(_rules(site_id), rule_id, "rule")))

    @extend_schema(
        summary="Change an alert rule",
        description=(
            "Any subset of the fields of a new rule, e.g. `enabled`, `threshold` or `channels` (the whole "
            "new list); the changed rule is validated as a whole. Needs a key with the manage scope."
        ),
        operation_id="sites_alerts_rules_update",
        parameters=[SITE, RULE_ID],
        request=a.RuleInputSerializer(partial=True),
        responses={200: a.RuleSerializer, **MANAGE_ERRORS},
    )
    def patch(self, request: Request, site_id: str, rule_id: int) -> Response:
        require_manage(request)
        rule = one(AlertRule.objects.filter(site_id=site_id), rule_id, "rule")
        fields = validated(a.RuleInputSerializer, request.data, partial=True)
        channels = _apply_rule_fields(rule, fields)
        return Response(_rule_json(_rule_saved(rule, channels)))

    @extend_schema(
        summary="Delete an alert rule",
        description="Its episodes and their delivery log go with it. Needs a key with the manage scope.",
        operation_id="sites_alerts_rules_destroy",
        parameters=[SITE, RULE_ID],
        responses={204: None, **MANAGE_ERRORS},
    )
    def delete(self, request: Request, site_id: str, rule_id: int) -> Response:
        require_manage(request)
        one(AlertRule.objects.filter(site_id=site_id), rule_id, "rule").delete()
        return Response(status=204)


# -- channels ----------------------------------------------------------------------------------


def _channel_json(channel: Channel, url: str | None = None) -> dict[str, object]:
    """A channel as listed: its webhook URL masked (``url_shown``) unless ``url`` is given (the
    answer to the key that just created it)."""
    return {
        "channel_id": str(channel.pk), "name": channel.name, "kind": channel.kind, "email": channel.email,
        "url": channel.url_shown if url is None else url, "slack": channel.slack, "enabled": channel.enabled,
        "created_at": _iso(channel.created_at),
    }  # fmt: skip


class ChannelsView(SiteView):
    @extend_schema(
        summary="The site's alert channels",
        description=(
            "Webhook secrets are never listed, and webhook URLs only as scheme and host (their path and "
            "query may be the credential, as a Slack incoming webhook's are): both are shown once, in the "
            "answer that creates the channel."
        ),
        operation_id="sites_alerts_channels_list",
        parameters=[SITE],
        responses={200: a.ChannelListSerializer, **ERRORS},
    )
    def get(self, request: Request, site_id: str) -> Response:
        return _listed(site_id, Channel.objects.filter(site_id=site_id), _channel_json)

    @extend_schema(
        summary="Create an alert channel",
        description=(
            "An email channel: `kind` email and the recipient's `email`. A webhook: `kind` webhook and an "
            "http(s) `url`; each request carries an HMAC-SHA256 signature of its body under the channel's "
            "`secret`, returned in this answer only (keep it: it is never shown again). `slack`: send a "
            "Slack-compatible body instead of Footfall's JSON. Needs a key with the manage scope."
        ),
        operation_id="sites_alerts_channels_create",
        parameters=[SITE],
        request=a.ChannelInputSerializer,
        responses={201: a.CreatedChannelSerializer, **MANAGE_ERRORS},
    )
    def post(self, request: Request, site_id: str) -> Response:
        require_manage(request)
        fields = validated(a.ChannelInputSerializer, request.data)
        channel = saved(Channel(site_id=site_id, **fields), ("name", "this site already has a channel of that name"))
        secret = channel.secret if channel.kind == WEBHOOK else None
        return Response({**_channel_json(channel, channel.url), "secret": secret}, status=201)


class ChannelView(SiteView):
    @extend_schema(
        summary="Delete an alert channel",
        description="Rules stop notifying it; its delivery log goes with it. Needs a key with the manage scope.",
        operation_id="sites_alerts_channels_destroy",
        parameters=[SITE, CHANNEL_ID],
        responses={204: None, **MANAGE_ERRORS},
    )
    def delete(self, request: Request, site_id: str, channel_id: int) -> Response:
        require_manage(request)
        one(Channel.objects.filter(site_id=site_id), channel_id, "channel").delete()
        return Response(status=204)


class ChannelSecretView(SiteView):
    @extend_schema(
        summary="Rotate a webhook's secret",
        description=(
            "A new secret, returned in this answer only. Until `previous_valid_until` (7 days) every request "
            "carries a second signature under the previous secret, so receivers switch over without "
            "missing an alert. Needs a key with the manage scope."
        ),
        operation_id="sites_alerts_channels_secret_rotate",
        parameters=[SITE, CHANNEL_ID],
        request=None,
        responses={200: a.RotatedSecretSerializer, **MANAGE_ERRORS},
    )
    def post(self, request: Request, site_id: str, channel_id: int) -> Response:
        require_manage(request)
        channel = one(Channel.objects.filter(site_id=site_id), channel_id, "channel")
        if channel.kind != WEBHOOK:
            raise QueryError("channel_id", "only a webhook channel has a secret")
        secret = channel.rotate_secret()
        return Response({"channel_id": str(channel.pk), "secret": secret,
                         "previous_valid_until": _iso(channel.previous_secret_until)})  # fmt: skip


# -- episodes ----------------------------------------------------------------------------------


def _episode_json(episode: Episode) -> dict[str, object]:
    return {
        "episode_id": str(episode.pk), "rule_id": str(episode.rule_id), "rule_name": episode.rule.name,
        "kind": episode.rule.kind, "opened_at": _iso(episode.opened_at), "resolved_at": _iso(episode.resolved_at),
        "value": episode.value, "peak": episode.peak, "suppressed": episode.suppressed,
        "details": episode.details if isinstance(episode.details, dict) else {},
    }  # fmt: skip


def _instant(raw: str, tz: ZoneInfo, parameter: str) -> dt.datetime | None:
    if not raw:
        return None
    try:
        moment = p.parse_instant(raw, tz, parameter)
    except OverflowError:  # an offset that moves year 1 or 9999 out of range
        moment = None
    if moment is None or not EARLIEST <= moment.year <= LATEST:
        raise QueryError(parameter, f"must be within the years {EARLIEST} to {LATEST}")
    return moment


def episode_filter(params: Mapping[str, str], site_tz: str) -> Q:
    """The episodes ``status`` (open, resolved; default both) and ``rule`` ask for, that overlap
    ``from``..``to`` (either end optional; dates are midnight in ``tz``, default the site's)."""
    status = p.choice(params, "status", ("all", "open", "resolved"), "all")
    query = Q()
    if status != "all":
        query &= Q(resolved_at__isnull=status == "open")
    if params.get("rule"):
        query &= Q(rule_id=p.bounded_int(params, "rule", 0, 1, 2**31 - 1))
    tz = p.parse_tz(params.get("tz"), site_tz)
    start, end = (_instant(params.get(name, ""), tz, name) for name in ("from", "to"))
    if start is not None and end is not None and end <= start:
        raise QueryError("to", "must be after from")
    if end is not None:
        query &= Q(opened_at__lt=end)
    if start is not None:  # still open, or resolved after the range began
        query &= Q(resolved_at__isnull=True) | Q(resolved_at__gt=start)
    return query


class EpisodesView(SiteView):
    @extend_schema(
        summary="The site's alert episodes, newest first",
        description=(
            "An episode is one stretch of time during which a rule's condition held: opened, then resolved. "
            "`from`/`to` keep the episodes that overlap the range (still open, or resolved after `from`, and "
            "opened before `to`). `details` holds what the notification showed."
        ),
        operation_id="sites_alerts_episodes_list",
        parameters=[
            SITE,
            OpenApiParameter("status", OpenApiTypes.STR, enum=["open", "resolved"], description="default both"),
            OpenApiParameter("rule", OpenApiTypes.INT, description="one rule's episodes"),
            OpenApiParameter("from", OpenApiTypes.STR, description="YYYY-MM-DD (midnight in tz) or ISO 8601"),
            OpenApiParameter("to", OpenApiTypes.STR, description="end (exclusive), same forms as from"),
            TZ,
            LIMIT,
            PAGE,
        ],
        responses={200: a.EpisodeListSerializer, **ERRORS},
    )
    def get(self, request: Request, site_id: str) -> Response:
        q = self.params(request)
        query = episode_filter(q, self.site(request).tz)
        limit = p.bounded_int(q, "limit", 10, 1, p.MAX_LIMIT)
        page = p.bounded_int(q, "page", 1, 1, 100_000)
        episodes = Episode.objects.filter(query, rule__site_id=site_id).select_related("rule")
        rows = episodes.order_by("-opened_at", "-id")[(page - 1) * limit : page * limit]
        body = {"site_id": site_id, "results": [_episode_json(e) for e in rows], "page": page, "limit": limit}
        return Response({**body, "total": episodes.count()})


# -- report subscriptions ----------------------------------------------------------------------


def _subscription_json(sub: ReportSubscription) -> dict[str, object]:
    return {
        "subscription_id": str(sub.pk), "email": sub.email, "frequency": sub.frequency,
        "created_at": _iso(sub.created_at), "unsubscribed_at": _iso(sub.unsubscribed_at),
        "last_period": sub.last_period,
    }  # fmt: skip


class SubscriptionsView(SiteView):
    @extend_schema(
        summary="The site's email report subscriptions",
        description="Recipients who unsubscribed (through the link in a report) stay listed, with `unsubscribed_at`.",
        operation_id="sites_reports_subscriptions_list",
        parameters=[SITE],
        responses={200: a.SubscriptionListSerializer, **ERRORS},
    )
    def get(self, request: Request, site_id: str) -> Response:
        return _listed(site_id, ReportSubscription.objects.filter(site_id=site_id), _subscription_json)

    @extend_schema(
        summary="Subscribe a recipient to the site's email report",
        description=(
            "Weekly reports go out on Mondays (the week before), monthly ones on the 1st (the month before). "
            "One subscription per recipient and frequency; a recipient who unsubscribed is not subscribed "
            "again here (400): delete the old subscription first. Needs a key with the manage scope."
        ),
        operation_id="sites_reports_subscriptions_create",
        parameters=[SITE],
        request=a.SubscriptionInputSerializer,
        responses={201: a.SubscriptionSerializer, **MANAGE_ERRORS},
    )
    def post(self, request: Request, site_id: str) -> Response:
        require_manage(request)
        fields = validated(a.SubscriptionInputSerializer, request.data)
        clash = ("email", f"this recipient already has a {fields['frequency']} subscription for this site")
        return Response(_subscription_json(saved(ReportSubscription(site_id=site_id, **fields), clash)), status=201)


class SubscriptionView(SiteView):
    @extend_schema(
        summary="Delete a report subscription",
        description="The recipient gets no more reports. Needs a key with the manage scope.",
        operation_id="sites_reports_subscriptions_destroy",
        parameters=[SITE, SUBSCRIPTION_ID],
        responses={204: None, **MANAGE_ERRORS},
    )
    def delete(self, request: Request, site_id: str, subscription_id: int) -> Response:
        require_manage(request)
        one(ReportSubscription.objects.filter(site_id=site_id), subscription_id, "subscription").delete()
        return Response(status=204)
