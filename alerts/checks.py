"""The alert checks: every enabled rule measured, its episode opened, kept or resolved.

Run from Celery every minute (``alerts.tasks.check_alerts``), never in a request thread.
For each rule: read its figure (:mod:`alerts.measure`), judge it (:mod:`alerts.rules`), then
in one transaction

* open an episode when the condition starts to hold and none is open (the database allows
  one open episode per rule, so two checks running at once open one), recorded
  ``suppressed`` when the rule already delivered ``max_per_day`` episodes that UTC day;
* keep an open one while it holds, recording how far it went (``peak``);
* resolve it when the condition clears (past the threshold by the hysteresis of
  :mod:`alerts.rules`);

and hand the change to :func:`alerts.notify.episode_changed`, which records one delivery per
channel and queues it once the transaction commits. A figure that cannot be judged (too little
history) changes nothing and is logged with the reason. A rule whose store is down is logged
and skipped; the other rules are still checked.

Deliveries still ``pending`` and never attempted :data:`REQUEUE_AFTER` after they were
recorded (their task was lost: a broker restart, a worker killed before it started) are
queued again. Those already attempted are the delivery task's own retries, left alone.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections import Counter
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.utils import timezone as dj_timezone

from alerts import notify
from alerts.measure import Measurer
from alerts.models import AlertRule, Delivery, Episode
from alerts.rules import Reading, RuleSpec, Verdict, details, further, judge
from query.health import failed_store
from query.runtime import get_conversions, get_health, get_service
from query.service import QuerySite

log = logging.getLogger(__name__)

REQUEUE_AFTER = dt.timedelta(minutes=5)
LIVE_RULES = frozenset({"spike", "drop", "goal"})


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one check did to one rule."""

    rule_id: int
    action: str  # opened | suppressed | kept | resolved | quiet | unknown | failed
    reason: str = ""


def spec_of(rule: AlertRule) -> RuleSpec:
    return RuleSpec(
        site_id=rule.site_id,
        name=rule.name,
        kind=rule.kind,
        threshold=rule.threshold,
        window_minutes=rule.window_minutes,
        scope=rule.scope,
        value=rule.value,
        goal_name=rule.goal.name if rule.goal_id else "",
    )


def dashboard_path(rule: AlertRule) -> str:
    page = "" if rule.kind in LIVE_RULES else "health"
    return f"/dashboard/{page}?site={rule.site_id}"


def default_measurer(now: dt.datetime) -> Measurer:
    """A measurer over this process's query layer (:mod:`query.runtime`), as the API's."""
    return Measurer(get_service(), get_conversions(), get_health(), now)


def run_checks(now: dt.datetime | None = None, measurer: Measurer | None = None) -> list[Outcome]:
    """Check every enabled rule at ``now`` (default: the clock) and re-queue lost deliveries."""
    now = now or dj_timezone.now()
    measurer = measurer or default_measurer(now)
    requeue_pending(now)
    outcomes = []
    rules = AlertRule.objects.filter(enabled=True).select_related("site", "goal").order_by("id")
    for rule in rules:
        try:
            outcomes.append(check_rule(rule, measurer, now))
        except Exception as exc:  # one rule failing (a store down, a bad goal) must not stop the others
            store = failed_store(exc)
            if store is not None:
                log.warning("alert rule %s (%s) not checked: %s is down: %s", rule.pk, rule, store, exc)
            else:
                log.exception("alert rule %s (%s) not checked", rule.pk, rule)
            outcomes.append(Outcome(rule.pk, "failed", f"{store or type(exc).__name__}: {exc}"))
    counts = Counter(o.action for o in outcomes)
    log.info("alert checks: %s", ", ".join(f"{n} {action}" for action, n in sorted(counts.items())) or "no rules")
    return outcomes


def check_rule(rule: AlertRule, measurer: Measurer, now: dt.datetime) -> Outcome:
    """Measure one rule and open, keep or resolve its episode (see the module docstring)."""
    spec = spec_of(rule)
    site = QuerySite.of(rule.site)
    reading = measurer.read(spec, site, rule.goal.spec() if rule.goal_id else None)
    with transaction.atomic():
        episode = Episode.objects.select_for_update().filter(rule=rule, resolved_at__isnull=True).first()
        verdict = judge(spec, reading, episode is not None)
        if verdict is Verdict.UNKNOWN:
            log.info("alert rule %s (%s) not judged: %s", rule.pk, rule, reading.reason)
            return Outcome(rule.pk, "unknown", reading.reason)
        if verdict is Verdict.HOLDS and episode is None:
            return _open(rule, spec, reading, now)
        if verdict is Verdict.HOLDS and episode is not None:
            value = reading.value if reading.value is not None else episode.peak
            if further(spec, value, episode.peak) != episode.peak:
                episode.peak = value
                episode.save(update_fields=["peak"])
            return Outcome(rule.pk, "kept")
        if episode is not None:
            episode.resolved_at = now
            episode.save(update_fields=["resolved_at"])
            notify.episode_changed(episode, "resolved")
            log.info("alert rule %s (%s) resolved: %s", rule.pk, rule, reading.value)
            return Outcome(rule.pk, "resolved")
    return Outcome(rule.pk, "quiet")


def _open(rule: AlertRule, spec: RuleSpec, reading: Reading, now: dt.datetime) -> Outcome:
    day_start = now.astimezone(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    delivered_today = Episode.objects.filter(rule=rule, opened_at__gte=day_start, suppressed=False).count()
    suppressed = delivered_today >= rule.max_per_day
    value = float(reading.value if reading.value is not None else 0.0)
    try:
        with transaction.atomic():
            episode = Episode.objects.create(
                rule=rule,
                opened_at=now,
                value=value,
                peak=value,
                details=details(spec, reading, dashboard_path(rule)),
                suppressed=suppressed,
            )
    except IntegrityError:  # a check running at the same time opened it first
        return Outcome(rule.pk, "kept")
    notify.episode_changed(episode, "opened")
    action = "suppressed" if suppressed else "opened"
    log.info("alert rule %s (%s) %s an episode: %s", rule.pk, rule, action, episode.details["summary"])
    return Outcome(rule.pk, action)


def requeue_pending(now: dt.datetime) -> int:
    """Queue again the deliveries recorded over :data:`REQUEUE_AFTER` ago and never attempted."""
    # Episode messages only: a report's delivery is retried by the reports' own run (alerts.report_delivery).
    pending = Delivery.objects.filter(status=Delivery.PENDING, attempts=0, channel__isnull=False)
    lost = list(pending.filter(created_at__lt=now - REQUEUE_AFTER))
    for delivery in lost:
        notify.queue(delivery)
    if lost:
        log.warning("re-queued %d alert deliveries whose task was lost", len(lost))
    return len(lost)
