"""Which reports are due, and sending each once: the domain side of ``alerts.tasks.send_reports``.

A subscription's report of a period is due from the period's end, local midnight in its site's
zone: Monday for the week (ISO, Monday to Sunday) just ended, the 1st for the month. It waits
until the nightly rollup has settled every day of the period, so the figures are the exact
ones the API gives for those days afterwards, but no longer than :data:`SETTLE_GRACE` after the
period's end: past that it goes out with the query layer's merge and says which days are not
final. The first report of a subscription is of the first period that ends after it was made.

Once per period and recipient: the unique ``Delivery(subscription, period)`` is recorded before
sending and claimed with a conditional update, so two runs (acks late, two beat processes)
never both send; ``ReportSubscription.last_period`` is set once it is sent. A failed send is
tried again by the next run, at most :data:`MAX_ATTEMPTS` times. A worker that dies after the
SMTP server accepted a message but before recording it would send it again on retry: email
offers no way to make that step atomic.
"""

from __future__ import annotations

import datetime as dt
import logging
import smtplib
from collections.abc import Iterable
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from alerts.models import Delivery, ReportSubscription
from alerts.periods import Period, last_complete
from alerts.report_mail import Rendered, ReportMailError, message, render
from alerts.reports import build_report, unsettled_days
from footfall.models import Goal, Site
from query.runtime import get_conversions, get_service
from query.service import QuerySite

log = logging.getLogger(__name__)

SETTLE_GRACE = dt.timedelta(hours=20)  # by local 20:00 on Monday (or the 1st) a report goes out, settled or not
MAX_ATTEMPTS = 5  # sends of one report to one recipient, one per run


@dataclass
class RunSummary:
    """What one run did: periods sent, deferred, failed (``site/period -> recipients``)."""

    sent: list[str] = field(default_factory=list)
    deferred: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, list[str]]:
        return {"sent": self.sent, "deferred": self.deferred, "failed": self.failed}


def site_info(site: Site) -> QuerySite:
    return QuerySite.of(site)


def render_report(site: Site, period: Period) -> Rendered:
    """``site``'s report of ``period``, read through the query layer and rendered."""
    goals = Goal.specs_by_site([site.site_id]).get(site.site_id, [])
    report = build_report(get_service(), get_conversions(), site_info(site), site.name, period, goals)
    return render(report)


def due_period(subscription: ReportSubscription, now: dt.datetime) -> Period | None:
    """The period whose report ``subscription`` is owed at ``now``, or None (already sent, or
    the period ended before the subscription was made)."""
    tz = ZoneInfo(subscription.site.timezone)
    period = last_complete(subscription.frequency, now.astimezone(tz).date())
    last = subscription.last_period
    # Keys of one frequency sort in time order (a weekly key has a W; the frequency may have changed).
    if last and ("W" in last) == ("W" in period.key) and last >= period.key:
        return None
    if subscription.created_at > period.bounds(tz)[1]:
        return None
    return period


def send_due_reports(now: dt.datetime) -> RunSummary:
    """Send every report due at ``now`` that has not been sent (see the module docstring)."""
    summary = RunSummary()
    # Recipients of one site and period share one report, built once.
    pending: dict[tuple[str, Period], list[ReportSubscription]] = {}
    subscriptions = ReportSubscription.objects.filter(unsubscribed_at__isnull=True).select_related("site")
    for sub in subscriptions.order_by("site_id", "id"):
        if (period := due_period(sub, now)) is not None:
            pending.setdefault((sub.site_id, period), []).append(sub)
    for (site_id, period), subs in pending.items():
        site = subs[0].site
        label = f"{site_id}/{period.key}"
        try:
            end = period.bounds(ZoneInfo(site.timezone))[1]
            if now < end + SETTLE_GRACE and unsettled_days(get_service(), site_info(site), period):
                summary.deferred.append(label)
                continue
            rendered = render_report(site, period)
        except Exception:  # one site's failure (a store down, bad data) must not stop the others' reports
            log.exception("report %s could not be built; the next run tries again", label)
            summary.failed.append(label)
            continue
        for sub in subs:
            outcome = deliver(sub, period, rendered)
            if outcome == Delivery.SENT:
                summary.sent.append(f"{label} -> {sub.email}")
            elif outcome == Delivery.FAILED:
                summary.failed.append(f"{label} -> {sub.email}")
    return summary


def deliver(subscription: ReportSubscription, period: Period, rendered: Rendered) -> str | None:
    """Send ``rendered`` to ``subscription`` for ``period`` unless already sent or being sent;
    return the delivery's new status (sent or failed), or None when nothing was attempted."""
    delivery = _delivery(subscription, period)
    if delivery is None or delivery.status == Delivery.SENT or delivery.attempts >= MAX_ATTEMPTS:
        return None
    # The claim: of two runs holding the same row, only one moves ``attempts`` on.
    claimed = (
        Delivery.objects.filter(pk=delivery.pk, attempts=delivery.attempts)
        .exclude(status=Delivery.SENT)
        .update(attempts=F("attempts") + 1)
    )
    if not claimed:
        return None
    if not ReportSubscription.objects.filter(pk=subscription.pk, unsubscribed_at__isnull=True).exists():
        # Unsubscribed while this run was on its way: recorded, never sent (nor retried).
        Delivery.objects.filter(pk=delivery.pk).update(status=Delivery.FAILED, last_error="unsubscribed before sending")
        return None
    try:
        message(rendered, subscription.email, subscription).send()
    except (smtplib.SMTPException, OSError, ReportMailError) as err:
        code = err.smtp_code if isinstance(err, smtplib.SMTPResponseException) else None
        Delivery.objects.filter(pk=delivery.pk).update(
            status=Delivery.FAILED, last_error=f"{type(err).__name__}: {err}"[:2000], response_status=code
        )
        log.warning("report %s to subscription %s failed: %s", period.key, subscription.pk, err)
        return Delivery.FAILED
    with transaction.atomic():
        Delivery.objects.filter(pk=delivery.pk).update(
            status=Delivery.SENT, sent_at=timezone.now(), last_error="", response_status=None
        )
        ReportSubscription.objects.filter(pk=subscription.pk).update(last_period=period.key)
    return Delivery.SENT


def _delivery(subscription: ReportSubscription, period: Period) -> Delivery | None:
    try:
        with transaction.atomic():
            return Delivery.objects.create(subscription=subscription, period=period.key, event=Delivery.REPORT)
    except IntegrityError:  # recorded by an earlier run (sent, failed, or under way)
        return Delivery.objects.filter(subscription=subscription, period=period.key).first()


def send_to_addresses(rendered: Rendered, addresses: Iterable[str]) -> None:
    """Send ``rendered`` by hand to ``addresses``: no subscription, no delivery record, no
    unsubscribe link (``manage.py send_report --to``)."""
    for address in addresses:
        message(rendered, address).send()
