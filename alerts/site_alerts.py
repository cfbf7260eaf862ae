"""A site's alert settings as the dashboard shows and edits them: rules, channels, report
subscriptions and episodes, read and changed one site at a time.

Every id a caller passes is looked up among the rows of the site it names, so an id of
another site's rule, channel, goal or subscription is "not found", never changed. Changes are
validated by the models (``full_clean``: their ``clean()`` and constraints) and refused with a
:class:`~django.core.exceptions.ValidationError` keyed by form field. Permissions are the
caller's business (the dashboard checks them before calling).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Literal

from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import transaction
from django.db.models import Model

from alerts.models import DROP, GOAL, SPIKE, AlertRule, Channel, Episode, ReportSubscription
from footfall.models import Goal, Site

# The kinds whose figure covers ``window_minutes``; the others ignore it (the model's default is kept).
WINDOWED_KINDS = frozenset({SPIKE, DROP, GOAL})
PAST_EPISODES = 50  # shown per site, newest first
UNIQUE_CODES = ("unique", "unique_together")
DUPLICATE = "this site already has one with this {field}"
Target = Literal["rule", "channel", "subscription"]
MODELS: dict[str, type[Model]] = {"rule": AlertRule, "channel": Channel, "subscription": ReportSubscription}


@dataclass(frozen=True, slots=True)
class SiteAlerts:
    """What the Alerts page lists for one site (querysets evaluated, related rows loaded)."""

    rules: list[AlertRule]
    open_episodes: list[Episode]
    past_episodes: list[Episode]
    channels: list[Channel]
    subscriptions: list[ReportSubscription]
    goals: list[Goal]


def overview(site_id: str, past: int = PAST_EPISODES) -> SiteAlerts:
    """The rules, channels, subscriptions and goals of ``site_id``, its open episodes and its
    ``past`` most recently opened resolved ones."""
    episodes = Episode.objects.filter(rule__site_id=site_id).select_related("rule")
    return SiteAlerts(
        rules=list(AlertRule.objects.filter(site_id=site_id).select_related("goal").prefetch_related("channels")),
        open_episodes=list(episodes.filter(resolved_at__isnull=True)),
        past_episodes=list(episodes.filter(resolved_at__isnull=False)[:past]),
        channels=list(Channel.objects.filter(site_id=site_id)),
        subscriptions=list(ReportSubscription.objects.filter(site_id=site_id)),
        goals=list(Goal.objects.filter(site_id=site_id).order_by("name", "id")),
    )


class NotInSite(LookupError):
    """Ids that name no row of the site: another site's, deleted or never made."""

    def __init__(self, what: str, ids: Collection[object]) -> None:
        self.ids = sorted(ids, key=str)
        super().__init__(f"no {what} of this site has the id(s) {', '.join(map(str, self.ids))}")


def site_goal(site_id: str, goal_id: int | None) -> Goal | None:
    """The goal ``goal_id`` of ``site_id`` (None for None); :class:`NotInSite` when the site has none of that id."""
    if goal_id is None:
        return None
    goal = Goal.objects.filter(site_id=site_id, pk=goal_id).first()
    if goal is None:
        raise NotInSite("goal", [goal_id])
    return goal


def site_channels(site_id: str, ids: Collection[int | None]) -> list[Channel]:
    """The channels ``ids`` of ``site_id`` (None stands for an id that could not be read);
    :class:`NotInSite` naming those the site does not have."""
    wanted = set(ids)
    channels = list(Channel.objects.filter(site_id=site_id, pk__in=wanted - {None}))
    missing = wanted - {c.pk for c in channels}
    if missing:
        raise NotInSite("channel", ["?" if i is None else i for i in missing])
    return channels


def create_rule(site_id: str, data: Mapping[str, object]) -> AlertRule:
    """Create a rule of ``site_id`` from form values (``name``, ``kind``, ``threshold``,
    ``window_minutes``, ``scope``, ``value``, ``goal`` (an id), ``max_per_day``, ``channels``
    (ids), ``enabled``); ValidationError by field when the model refuses it."""
    site = Site.objects.get(site_id=site_id)
    kind = _text(data.get("kind"))
    errors: dict[str, list[str]] = {}
    goal = None
    goal_id = _int_or_none(data.get("goal"))
    try:
        if goal_id is None and data.get("goal") not in (None, ""):
            raise NotInSite("goal", [data.get("goal")])
        goal = site_goal(site_id, goal_id)
    except NotInSite:
        errors["goal"] = ["not a goal of this site"]
    channel_ids = data.get("channels") or []
    if not isinstance(channel_ids, list | tuple):
        channel_ids = [channel_ids]
    channels: list[Channel] = []
    try:
        channels = site_channels(site_id, [_int_or_none(c) for c in channel_ids])
    except NotInSite:
        errors["channels"] = ["not a channel of this site"]
    rule = AlertRule(
        site=site,
        name=_text(data.get("name")).strip(),
        kind=kind,
        threshold=_number(data.get("threshold"), "threshold", errors),
        scope=_text(data.get("scope")),
        value=_text(data.get("value")).strip(),
        goal=goal,
        enabled=bool(data.get("enabled", True)),
    )
    # A value that is not a number keeps the model's default, so clean() can still judge the rest.
    for field in ("window_minutes", "max_per_day"):
        if field == "window_minutes" and kind not in WINDOWED_KINDS:
            continue
        if field == "max_per_day" and data.get(field) in (None, ""):
            continue
        number = _number(data.get(field), field, errors, integer=True)
        if number is not None:
            setattr(rule, field, number)
    _validate(rule, errors, unique_field="name")
    with transaction.atomic():
        rule.save()
        rule.channels.set(channels)
    return rule


def create_channel(site_id: str, data: Mapping[str, object]) -> Channel:
    """Create a channel of ``site_id`` (``name``, ``kind``, ``email``, ``url``, ``slack``); its
    signing secret is generated. ValidationError by field when the model refuses it."""
    channel = Channel(
        site=Site.objects.get(site_id=site_id),
        name=_text(data.get("name")).strip(),
        kind=_text(data.get("kind")),
        email=_text(data.get("email")).strip(),
        url=_text(data.get("url")).strip(),
        slack=bool(data.get("slack")),
    )
    _validate(channel, {}, unique_field="name")
    channel.save()
    return channel


def create_subscription(site_id: str, data: Mapping[str, object]) -> ReportSubscription:
    """Subscribe ``email`` to ``site_id``'s ``frequency`` (weekly|monthly) report; one who
    unsubscribed stays so (the row remains) until the subscription is deleted."""
    subscription = ReportSubscription(
        site=Site.objects.get(site_id=site_id),
        email=_text(data.get("email")).strip(),
        frequency=_text(data.get("frequency")),
    )
    _validate(subscription, {}, unique_field="email")
    subscription.save()
    return subscription


def set_enabled(site_id: str, target: Literal["rule", "channel"], ids: Collection[object], enabled: bool) -> int:
    """Enable or disable the rules or channels ``ids`` of ``site_id``; how many were changed
    (ids of other sites, unknown or malformed, are skipped)."""
    model = MODELS[target]
    return model.objects.filter(site_id=site_id, pk__in=_ids(ids)).exclude(enabled=enabled).update(enabled=enabled)


def delete(site_id: str, target: Target, ids: Collection[object]) -> int:
    """Delete the rules, channels or subscriptions ``ids`` of ``site_id`` (with their episodes
    and deliveries); how many were deleted (ids of other sites are skipped)."""
    model = MODELS[target]
    rows = model.objects.filter(site_id=site_id, pk__in=_ids(ids))
    count = rows.count()
    rows.delete()
    return count


def _validate(instance: Model, errors: dict[str, list[str]], unique_field: str) -> None:
    """Run the model's validation, merged with ``errors`` found while reading the form; a
    duplicate (a unique constraint over the site and ``unique_field``) is reported on that field."""
    try:
        instance.full_clean(exclude=list(errors))
    except ValidationError as exc:
        for field, messages in exc.message_dict.items():
            duplicate = field == NON_FIELD_ERRORS and any(e.code in UNIQUE_CODES for e in exc.error_dict[field])
            # The pair (site, unique_field) is what clashed: the form says so next to that field.
            key = unique_field if duplicate else field
            errors.setdefault(key, []).extend([DUPLICATE.format(field=unique_field)] if duplicate else messages)
    if errors:
        raise ValidationError(errors)


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _int_or_none(value: object) -> int | None:
    try:
        return int(str(value))
    except ValueError:
        return None


def _number(value: object, field: str, errors: dict[str, list[str]], integer: bool = False) -> float | int | None:
    """``value`` as a number; None with an error for ``field`` when it is missing or not one."""
    if isinstance(value, bool) or value in (None, ""):
        errors[field] = ["a number is required"]
        return None
    try:
        number = float(str(value))
    except ValueError:
        errors[field] = ["a number is required"]
        return None
    if not math.isfinite(number):
        errors[field] = ["a finite number is required"]
        return None
    if integer:
        if not number.is_integer():
            errors[field] = ["a whole number is required"]
            return None
        return int(number)
    return number


def _ids(ids: Collection[object]) -> set[int]:
    return {i for i in (_int_or_none(v) for v in ids) if i is not None}
