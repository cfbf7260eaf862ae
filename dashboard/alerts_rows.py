"""The rows of the Alerts page's tables, from a site's rules, episodes, channels and report
subscriptions (pure; :mod:`dashboard.alerts` places them).

Every value (rule and channel names, episode summaries naming referrers and pages) stays a plain
value, placed as a DataTable cell; webhook URLs are shown by their host only, since a
Slack-style URL is itself the credential.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from zoneinfo import ZoneInfo

from alerts.models import EMAIL, RULE_KINDS, THRESHOLD_MEANING, WEBHOOK, AlertRule, Channel, Episode, ReportSubscription
from alerts.site_alerts import WINDOWED_KINDS

KIND_LABELS = dict(RULE_KINDS)


def number(value: float | None) -> str:
    """A figure as the page shows it: whole numbers with separators, others to at most two decimals."""
    if value is None:
        return "—"
    return f"{int(value):,}" if float(value).is_integer() else f"{value:,.2f}".rstrip("0")


def threshold_text(rule: AlertRule) -> str:
    """The threshold in words, e.g. ``3 — z-score of the last window against …``."""
    return f"{number(rule.threshold)} — {THRESHOLD_MEANING.get(rule.kind, '')}".rstrip(" —")


def subject_text(rule: AlertRule) -> str:
    """What the rule watches: the site, a page or referrer (one or any), a goal, the pipeline."""
    if rule.kind == "goal":
        return f"goal {rule.goal.name}" if rule.goal else "goal (deleted)"
    if rule.kind not in WINDOWED_KINDS:
        return "the pipeline"
    if rule.scope:
        noun = "page" if rule.scope == "page" else "referrer"
        return f"{noun} {rule.value}" if rule.value else f"any {noun}"
    return "the whole site"


def local_time(moment: dt.datetime | None, tz: ZoneInfo) -> str:
    return moment.astimezone(tz).strftime("%Y-%m-%d %H:%M") if moment else "—"


def duration(seconds: float) -> str:
    """``seconds`` as "45 min", "3 h 5 min" or "2 d 4 h"."""
    minutes = max(0, int(seconds // 60))
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if hours < 48 else f"{hours // 24} d {hours % 24} h"


def rule_rows(rules: Iterable[AlertRule], firing: Iterable[int]) -> list[dict[str, object]]:
    """One row per rule; ``firing`` are the ids of rules with an open episode."""
    open_ids = set(firing)
    return [
        {
            "id": r.pk,
            "name": r.name,
            "kind": KIND_LABELS.get(r.kind, r.kind),
            "subject": subject_text(r),
            "threshold": threshold_text(r),
            "window": f"{r.window_minutes} min" if r.kind in WINDOWED_KINDS else "—",
            "channels": ", ".join(c.name for c in r.channels.all()) or "none",
            "max_per_day": r.max_per_day,
            "enabled": "on" if r.enabled else "off",
            "state": "firing" if r.pk in open_ids else "ok",
        }
        for r in rules
    ]


def _value_vs_threshold(episode: Episode) -> str:
    details = episode.details if isinstance(episode.details, Mapping) else {}
    threshold = details.get("threshold", episode.rule.threshold)
    return f"{number(episode.value)} vs {number(threshold if isinstance(threshold, int | float) else None)}"


def _summary(episode: Episode) -> str:
    details = episode.details if isinstance(episode.details, Mapping) else {}
    summary = details.get("summary")
    return summary if isinstance(summary, str) and summary else KIND_LABELS.get(episode.rule.kind, episode.rule.kind)


def open_rows(episodes: Iterable[Episode], tz: ZoneInfo, now: dt.datetime) -> list[dict[str, object]]:
    """The open episodes: what happened, since when, the figure against the threshold."""
    return [
        {
            "id": e.pk,
            "rule": e.rule.name,
            "summary": _summary(e),
            "since": f"{local_time(e.opened_at, tz)} ({duration((now - e.opened_at).total_seconds())} ago)",
            "value": _value_vs_threshold(e),
            "peak": number(e.peak),
            "delivered": "no: over the daily limit" if e.suppressed else "yes",
        }
        for e in episodes
    ]


def past_rows(episodes: Iterable[Episode], tz: ZoneInfo) -> list[dict[str, object]]:
    """Resolved episodes: opened, resolved, how long, and whether they were delivered."""
    return [
        {
            "id": e.pk,
            "rule": e.rule.name,
            "summary": _summary(e),
            "opened": local_time(e.opened_at, tz),
            "resolved": local_time(e.resolved_at, tz),
            "lasted": duration((e.resolved_at - e.opened_at).total_seconds()) if e.resolved_at else "—",
            "value": _value_vs_threshold(e),
            "peak": number(e.peak),
            "delivered": "no: over the daily limit" if e.suppressed else "yes",
        }
        for e in episodes
    ]


def channel_rows(channels: Iterable[Channel]) -> list[dict[str, object]]:
    return [
        {
            "id": c.pk,
            "name": c.name,
            "kind": "webhook (Slack body)" if c.kind == WEBHOOK and c.slack else c.kind,
            "target": c.email if c.kind == EMAIL else c.url_shown,
            "enabled": "on" if c.enabled else "off",
        }
        for c in channels
    ]


def subscription_rows(subscriptions: Iterable[ReportSubscription], tz: ZoneInfo) -> list[dict[str, object]]:
    return [
        {
            "id": s.pk,
            "email": s.email,
            "frequency": s.frequency,
            "status": f"unsubscribed {local_time(s.unsubscribed_at, tz)}" if s.unsubscribed_at else "subscribed",
            "last_period": s.last_period or "none yet",
        }
        for s in subscriptions
    ]
