"""What an episode's notification says: the email (text, HTML and an inline chart) and the
webhook bodies (Footfall's JSON, or Slack's ``{"text", "blocks"}``).

Everything here is rendering, no I/O: each function takes the episode, the event
(``opened`` or ``resolved``) and the public base URL, and returns the message to send, so the
same input gives the same message (the chart included). Figures come from
``Episode.details`` (the shape is the alert checks' contract, see ``docs/alerts.md``); a
missing key renders as absent, never as an error, because a notification with less detail
beats no notification. Links are built on ``FOOTFALL_PUBLIC_URL``; without one a message
has no link rather than a broken one.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from email.mime.image import MIMEImage
from typing import Any, Literal
from zoneinfo import ZoneInfo

from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string

from alerts.charts import series_png
from alerts.models import RULE_KINDS, SPIKE, Episode

log = logging.getLogger(__name__)

Event = Literal["opened", "resolved"]
EVENTS: tuple[Event, ...] = ("opened", "resolved")
WEBHOOK_SCHEMA = 1  # bumped on an incompatible change of the JSON body (docs/alerts.md)
CHART_CID = "footfall-chart"
TOP_ROWS = 10  # rows of top referrers and pages a message lists at most

KIND_LABELS = dict(RULE_KINDS)
METRIC_LABELS = {
    "z_score": "spreads above the usual (z-score)",
    "visitors": "visitors",
    "conversions": "conversions",
    "lag_s": "seconds of lag",
    "lag_events": "events behind",
    "drift_pct": "% drift",
    "hours_late": "hours late",
}
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Facts:
    """An episode's notification as plain values, shared by every format."""

    event: Event
    site_id: str
    site_name: str
    rule_id: int
    rule_name: str
    kind: str
    kind_label: str
    summary: str
    metric_label: str
    value: str
    threshold: str
    peak: str
    window: str | None  # "60 minutes", for rules over a window
    subject: str  # what the figure is about: the whole site, a page, a referrer, a goal, a day
    top_referrers: list[dict[str, Any]]
    top_pages: list[dict[str, Any]]
    opened_at: str  # in the site's time zone
    resolved_at: str | None
    lasted: str | None  # for a resolved episode, how long it lasted
    link: str | None

    @property
    def title(self) -> str:
        """One line naming the site, the rule and what happened (subjects, Slack's fallback text)."""
        state = "Resolved: " if self.event == "resolved" else ""
        return _one_line(f"{state}{self.site_name}: {self.rule_name} ({self.kind_label})")


def facts(episode: Episode, event: Event, public_url: str | None) -> Facts:
    """The plain values every format of ``episode``'s ``event`` message shows."""
    if event not in EVENTS:
        raise ValueError(f"event: expected one of {EVENTS}, got {event!r}")
    rule, details = episode.rule, episode.details if isinstance(episode.details, Mapping) else {}
    site = rule.site
    zone = _zone(site.timezone)
    metric = str(details.get("metric") or "")
    window = details.get("window_minutes")
    subject = str(details.get("subject") or "site")
    resolved = episode.resolved_at if event == "resolved" else None
    return Facts(
        event=event,
        site_id=site.site_id,
        site_name=_one_line(site.name or site.site_id),
        rule_id=rule.pk,
        rule_name=_one_line(rule.name),
        kind=rule.kind,
        kind_label=KIND_LABELS.get(rule.kind, rule.kind),
        summary=str(details.get("summary") or f"{KIND_LABELS.get(rule.kind, rule.kind)}: {_number(episode.value)}"),
        metric_label=METRIC_LABELS.get(metric, metric or "value"),
        value=_number(details.get("value", episode.value)),
        threshold=_number(details.get("threshold", rule.threshold)),
        peak=_number(episode.peak),
        window=f"{window} minutes" if isinstance(window, int) and window > 0 else None,
        subject="the whole site" if subject == "site" else subject,
        top_referrers=_rows(details.get("top_referrers")),
        top_pages=_rows(details.get("top_pages")),
        opened_at=_when(episode.opened_at, zone),
        resolved_at=_when(resolved, zone) if resolved else None,
        lasted=_duration(resolved - episode.opened_at) if resolved else None,
        link=dashboard_link(public_url, details.get("dashboard_path")),
    )


def episode_email(episode: Episode, event: Event, to: str, public_url: str | None) -> EmailMultiAlternatives:
    """The email of ``episode``'s ``event`` to ``to``: text and HTML alternatives, with the
    series chart attached inline (``cid:footfall-chart``) when the details carry a series.
    The sender is ``DEFAULT_FROM_EMAIL`` (``EMAIL_FROM``)."""
    f = facts(episode, event, public_url)
    chart = chart_png(episode)
    context = {"f": f, "chart_cid": CHART_CID if chart else None, "is_spike": f.kind == SPIKE}
    text = render_to_string("alerts/episode_email.txt", context)
    html = render_to_string("alerts/episode_email.html", context)
    message = EmailMultiAlternatives(subject=f"[Footfall] {f.title}", body=text, to=[to])
    message.attach_alternative(html, "text/html")
    if chart:
        attach_inline_png(message, chart, CHART_CID, "chart.png")
    return message


def attach_inline_png(message: EmailMultiAlternatives, png: bytes, cid: str, filename: str) -> None:
    """Attach ``png`` to ``message`` for its HTML part to show as ``cid:<cid>``."""
    # multipart/related holds the HTML and the image it shows by Content-ID, so mail
    # clients render it in place instead of listing it as a download.
    message.mixed_subtype = "related"
    image = MIMEImage(png, "png")
    image.add_header("Content-ID", f"<{cid}>")
    image.add_header("Content-Disposition", "inline", filename=filename)
    message.attach(image)


def chart_png(episode: Episode) -> bytes | None:
    """The PNG of ``details["series"]`` (times in the site's zone, the rule's window shaded),
    or None when there is no series or it cannot be read (logged: the message goes without)."""
    details = episode.details if isinstance(episode.details, Mapping) else {}
    raw = details.get("series") or []
    try:
        points = parse_series(raw, _zone(episode.rule.site.timezone))
    except ValueError as exc:
        log.warning("episode %s: series not drawn: %s", episode.pk, exc)
        return None
    if not points:
        return None
    window = details.get("window_minutes")
    highlight = points[-1][0] - dt.timedelta(minutes=window) if isinstance(window, int) and window > 0 else None
    metric = str(details.get("metric") or "")
    return series_png(
        points, title=_one_line(episode.rule.name), ylabel=METRIC_LABELS.get(metric, metric), highlight_from=highlight
    )


def parse_series(raw: object, zone: dt.tzinfo) -> list[tuple[dt.datetime, float]]:
    """``[{"t": ISO 8601 with an offset, "v": number}, ...]`` as aware times in ``zone``, in
    time order; raises ValueError naming the first bad point."""
    if not isinstance(raw, Sequence) or isinstance(raw, str | bytes):
        raise ValueError("series: expected a list of {t, v} points")
    points = []
    for i, point in enumerate(raw):
        try:
            t = dt.datetime.fromisoformat(point["t"])
            v = point["v"]
            if t.tzinfo is None or isinstance(v, bool) or not isinstance(v, int | float):
                raise TypeError
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"series[{i}]: expected {{'t': ISO 8601 time with an offset, 'v': number}}") from None
        points.append((t.astimezone(zone), float(v)))
    return sorted(points, key=lambda p: p[0])


def webhook_body(delivery_id: int, episode: Episode, event: Event, public_url: str | None) -> dict[str, Any]:
    """Footfall's webhook JSON (schema 1, documented in ``docs/alerts.md``)."""
    f = facts(episode, event, public_url)
    rule = episode.rule
    return {
        "schema": WEBHOOK_SCHEMA,
        "delivery_id": delivery_id,
        "event": event,
        "title": f.title,
        "summary": f.summary,
        "site": {"id": f.site_id, "name": f.site_name},
        "rule": {
            "id": rule.pk,
            "name": rule.name,
            "kind": rule.kind,
            "threshold": rule.threshold,
            "window_minutes": rule.window_minutes,
            "scope": rule.scope,
            "value": rule.value,
        },
        "episode": {
            "id": episode.pk,
            "opened_at": _iso(episode.opened_at),
            "resolved_at": _iso(episode.resolved_at) if event == "resolved" and episode.resolved_at else None,
            "value": episode.value,
            "peak": episode.peak,
        },
        "details": dict(episode.details) if isinstance(episode.details, Mapping) else {},
        "url": f.link,
    }


def slack_body(episode: Episode, event: Event, public_url: str | None) -> dict[str, Any]:
    """A Slack incoming-webhook body (``text`` as the notification fallback, ``blocks`` for
    the message); user text is escaped so a referrer cannot inject a link or a mention."""
    f = facts(episode, event, public_url)
    icon = ":white_check_mark:" if event == "resolved" else ":rotating_light:"
    lines = [f"{icon} *{_slack(f.title)}*", _slack(f.summary)]
    if f.lasted:
        lines.append(f"Resolved {_slack(f.resolved_at or '')} after {_slack(f.lasted)}.")
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": "\n".join(lines)}},
        {
            "type": "section",
            "fields": [
                {"type": "mrkdwn", "text": f"*{_slack(f.metric_label.capitalize())}*\n{f.value}"},
                {"type": "mrkdwn", "text": f"*Threshold*\n{f.threshold}"},
                {"type": "mrkdwn", "text": f"*About*\n{_slack(f.subject)}"},
                {"type": "mrkdwn", "text": f"*Opened*\n{_slack(f.opened_at)}"},
            ],
        },
    ]
    for heading, rows in (("Top referrers", f.top_referrers), ("Top pages", f.top_pages)):
        if rows:
            listed = "\n".join(f"• {_slack(r['value'])}: {r['visitors']}" for r in rows)
            blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": f"*{heading}*\n{listed}"}})
    if f.link:
        button = {"type": "button", "text": {"type": "plain_text", "text": "Open dashboard"}, "url": f.link}
        blocks.append({"type": "actions", "elements": [button]})
    return {"text": f"{f.title}: {f.summary}", "blocks": blocks}


def dashboard_link(public_url: str | None, path: object) -> str | None:
    """``public_url`` joined with a dashboard ``path`` (``/dashboard/...``), or None when either
    is missing or the path is not a plain absolute path (never a link to another host)."""
    if not public_url or not isinstance(path, str) or not path.startswith("/") or path.startswith("//"):
        return None
    if any(c.isspace() or ord(c) < 32 for c in path) or "\\" in path:
        return None
    return public_url.rstrip("/") + path


def _rows(raw: object) -> list[dict[str, Any]]:
    """The ``[{"value", "visitors"}]`` rows that are well formed, the first :data:`TOP_ROWS`."""
    if not isinstance(raw, Sequence) or isinstance(raw, str | bytes):
        return []
    rows = []
    for row in raw:
        if isinstance(row, Mapping) and isinstance(row.get("visitors"), int | float):
            rows.append({"value": str(row.get("value") or "(none)"), "visitors": _number(row["visitors"])})
    return rows[:TOP_ROWS]


def _number(value: object) -> str:
    """A figure as people read it: whole numbers without decimals, others with up to two."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.2f}".rstrip("0").rstrip(".")


def _zone(name: str) -> dt.tzinfo:
    try:
        return ZoneInfo(name)
    except (ValueError, KeyError):  # validated on the model; a zone removed from tzdata falls back
        return dt.UTC


def _when(at: dt.datetime, zone: dt.tzinfo) -> str:
    return at.astimezone(zone).strftime("%Y-%m-%d %H:%M %Z")


def _iso(at: dt.datetime) -> str:
    return at.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


def _duration(delta: dt.timedelta) -> str:
    minutes = max(0, round(delta.total_seconds() / 60))
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if hours < 48 else f"{hours // 24} days {hours % 24} h"


def _one_line(text: str) -> str:
    """Whitespace runs collapsed: a header (the subject) must not contain a line break."""
    return _SPACES.sub(" ", text).strip()


def _slack(text: str) -> str:
    """Slack mrkdwn control characters escaped, as its API asks (``&``, ``<``, ``>``)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
