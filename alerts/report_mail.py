"""A report as an email: HTML and text parts, the chart inline, and a signed unsubscribe link.

The unsubscribe link carries a token signed with Django's ``SECRET_KEY`` (``django.core.signing``,
salted for this one use) over the subscription's id and a digest of its recipient's address: it
unsubscribes that recipient from that subscription only, keeps working without a session or a
password, and stops matching if the subscription's address is changed. The message also
carries ``List-Unsubscribe`` and ``List-Unsubscribe-Post: List-Unsubscribe=One-Click``
(RFC 8058), so mail clients offer a one-click unsubscribe that POSTs to the same link.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from django.conf import settings
from django.core import signing
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string
from django.urls import reverse

from alerts.charts import series_png
from alerts.messages import attach_inline_png
from alerts.models import ReportSubscription
from alerts.reports import Report, Total
from footfall.revenue import money_text

UNSUBSCRIBE_SALT = "footfall.alerts.report-unsubscribe"
CHART_CID = "visitors-chart"


class ReportMailError(Exception):
    """A report cannot be addressed as configured (e.g. no public URL for its links)."""


class BadToken(Exception):
    """An unsubscribe token that is malformed, tampered with, or no longer matches its subscription."""


# -- unsubscribe tokens ------------------------------------------------------------------


def _address_digest(email: str) -> str:
    # A digest, not the address: the link ends up in logs and browser histories.
    return hashlib.sha256(email.strip().lower().encode()).hexdigest()[:24]


def unsubscribe_token(subscription: ReportSubscription) -> str:
    """The signed token of ``subscription`` and its current recipient (URL-safe, no expiry)."""
    return signing.dumps([subscription.pk, _address_digest(subscription.email)], salt=UNSUBSCRIBE_SALT)


def subscription_for(token: str) -> ReportSubscription:
    """The subscription ``token`` was made for; BadToken if its signature does not verify, it
    is malformed, the subscription is gone, or its recipient is no longer the one signed for."""
    try:
        payload = signing.loads(token, salt=UNSUBSCRIBE_SALT)
    except signing.BadSignature:
        raise BadToken("the link's signature does not match: it was altered or cut short") from None
    if not (isinstance(payload, list) and len(payload) == 2 and isinstance(payload[0], int)):
        raise BadToken("the link does not name a subscription")
    subscription = ReportSubscription.objects.select_related("site").filter(pk=payload[0]).first()
    if subscription is None:
        raise BadToken("the subscription it names no longer exists")
    if _address_digest(subscription.email) != payload[1]:
        raise BadToken("the subscription it names now goes to another address")
    return subscription


def unsubscribe_url(subscription: ReportSubscription) -> str:
    """The absolute unsubscribe link (``FOOTFALL_PUBLIC_URL`` + the view's path)."""
    return absolute(reverse("alerts:unsubscribe", args=[unsubscribe_token(subscription)]))


def absolute(path: str) -> str:
    base = settings.FOOTFALL.public_url
    if not base:
        raise ReportMailError("FOOTFALL_PUBLIC_URL is not set: report emails need it for their links")
    return f"{base}{path}"


# -- the message ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Rendered:
    """A report rendered once, shared by its recipients (only the footer link differs)."""

    report: Report
    subject: str
    context: dict[str, object]
    chart: bytes | None


def render(report: Report) -> Rendered:
    """Subject, template context and chart of ``report`` (no recipient yet)."""
    visitors = report.totals["visitors"]
    subject = f"{report.site_name}: {report.period.label}, {_count(visitors.value)} visitors"
    if visitors.change is not None:
        subject += f" ({_percent_change(visitors.change)})"
    points = [(t, float(v)) for t, v in report.daily_visitors if v is not None]
    chart = series_png(points, title="Visitors per day", ylabel="visitors") if points else None
    context = {
        "report": report,
        "subject": subject,
        "totals": _total_rows(report.totals),
        "pages": [_row(r) for r in report.top_pages],
        "referrers": [_row(r) for r in report.top_referrers],
        "goals": [_goal_row(r) for r in report.goals],
        "has_chart": chart is not None,
        "chart_cid": CHART_CID,
        "dashboard_url": absolute(f"{reverse('dashboard:home')}?site={report.site_id}"),
        "unsettled": ", ".join(report.unsettled_days),
    }
    return Rendered(report, subject, context, chart)


def message(rendered: Rendered, to: str, subscription: ReportSubscription | None = None) -> EmailMultiAlternatives:
    """The email of ``rendered`` to ``to``: for a subscription with its unsubscribe link and
    RFC 8058 headers; without one (a report sent by hand) with neither."""
    link = unsubscribe_url(subscription) if subscription is not None else None
    context = {**rendered.context, "unsubscribe_url": link, "recipient": to}
    text = render_to_string("alerts/report.txt", context)
    html = render_to_string("alerts/report.html", context)
    headers = {"Auto-Submitted": "auto-generated"}
    if link:
        headers |= {"List-Unsubscribe": f"<{link}>", "List-Unsubscribe-Post": "List-Unsubscribe=One-Click"}
    msg = EmailMultiAlternatives(rendered.subject, text, to=[to], headers=headers)
    msg.attach_alternative(html, "text/html")
    if rendered.chart is not None:
        attach_inline_png(msg, rendered.chart, CHART_CID, "visitors.png")
    return msg


# -- formatting -----------------------------------------------------------------------------


def _count(value: object) -> str:
    return "-" if value is None else f"{int(value):,}"


def _percent_change(change: float) -> str:
    return f"{change * 100:+.1f} %"


def _duration(seconds: object) -> str:
    if seconds is None:
        return "-"
    whole = round(float(seconds))
    return f"{whole // 60} min {whole % 60:02d} s" if whole >= 60 else f"{whole} s"


def _rate(value: object) -> str:
    return "-" if value is None else f"{float(value) * 100:.1f} %"


FORMATS = {
    "visitors": ("Visitors", _count),
    "pageviews": ("Page views", _count),
    "sessions": ("Visits", _count),
    "bounce_rate": ("Bounce rate", _rate),
    "visit_duration": ("Visit duration", _duration),
}


def _total_rows(totals: dict[str, Total]) -> list[dict[str, str]]:
    rows = []
    for name, (label, fmt) in FORMATS.items():
        total = totals[name]
        change = "-" if total.change is None else _percent_change(total.change)
        rows.append({"name": name, "label": label, "value": fmt(total.value), "previous": fmt(total.previous),
                     "change": change})  # fmt: skip
    return rows


def _row(row: dict[str, object]) -> dict[str, str]:
    return {"value": str(row["value"]), "pageviews": _count(row["pageviews"]), "visitors": _count(row["visitors"])}


def _goal_row(row: dict[str, object]) -> dict[str, str]:
    revenue = row.get("revenue") or {}
    return {"name": str(row["name"]), "events": _count(row["events"]), "visitors": _count(row["visitors"]),
            "rate": _rate(row["conversion_rate"]),
            "revenue": money_text(revenue.get("currencies")) or "-"}  # type: ignore[union-attr]  # fmt: skip
