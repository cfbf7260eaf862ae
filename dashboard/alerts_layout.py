"""The Alerts page: a site's rules, open and past episodes, channels and report subscriptions,
and the forms that add them. Pure: component trees and the rows of its tables (no queries).

Every value (rule and channel names, episode summaries naming referrers and pages) is placed
as a DataTable cell or a component's text, both rendered as text; webhook URLs are shown by
their host only, since a Slack-style URL is itself the credential.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

from dash import dcc, html

from alerts.models import (
    EMAIL,
    RULE_KINDS,
    SPIKE_SCOPES,
    THRESHOLD_MEANING,
    WEBHOOK,
    AlertRule,
    Channel,
    Episode,
    ReportSubscription,
)
from alerts.site_alerts import WINDOWED_KINDS
from dashboard import messages
from dashboard.layout import alert, table

KIND_LABELS = dict(RULE_KINDS)
REFRESH_MS = 60_000
# The form fields whose errors are shown next to them; any other key goes to the form's own line.
RULE_FIELDS = ("name", "kind", "threshold", "window_minutes", "scope", "value", "goal", "max_per_day", "channels")
CHANNEL_FIELDS = ("name", "kind", "email", "url", "slack")
SUBSCRIPTION_FIELDS = ("email", "frequency")
FORMS = {"rule": RULE_FIELDS, "channel": CHANNEL_FIELDS, "subscription": SUBSCRIPTION_FIELDS}
# The buttons acting on a table's selected rows: (table, action); enabling needs the model's
# change permission, deleting its delete permission.
ACTIONS = (
    ("rule", "enable"), ("rule", "disable"), ("rule", "delete"),
    ("channel", "enable"), ("channel", "disable"), ("channel", "delete"),
    ("subscription", "delete"),
)  # fmt: skip
ACTION_LABELS = {"enable": "Enable", "disable": "Disable", "delete": "Delete"}
TABLE_IDS = {"rule": "alerts-rules", "channel": "alerts-channels", "subscription": "alerts-subs"}


def button_id(target: str, action: str) -> str:
    return f"alerts-{target}-{action}"


def trigger(target: str, action: str) -> tuple[str, str]:
    """The component and property whose change runs ``action`` on ``target``'s selected rows:
    a delete only once its confirmation dialog is accepted."""
    if action == "delete":
        return f"{button_id(target, action)}-confirm", "submit_n_clicks"
    return button_id(target, action), "n_clicks"


def error_id(form: str, field: str) -> str:
    return f"alerts-{form}-err-{field}"


# -- rows -----------------------------------------------------------------------------------


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


def webhook_target(url: str) -> str:
    """A webhook's URL without its path and query, which may carry its credential."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}/…" if parts.scheme and parts.hostname else "(hidden)"


def channel_rows(channels: Iterable[Channel]) -> list[dict[str, object]]:
    return [
        {
            "id": c.pk,
            "name": c.name,
            "kind": "webhook (Slack body)" if c.kind == WEBHOOK and c.slack else c.kind,
            "target": c.email if c.kind == EMAIL else webhook_target(c.url),
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


def field_errors(form: str, errors: Mapping[str, Sequence[str]]) -> tuple[list[str], str]:
    """Split a ValidationError's ``message_dict`` into the texts shown next to each field of
    ``form`` (in :data:`FORMS` order) and the rest, shown on the form's own line."""
    fields = FORMS[form]
    beside = [" ".join(errors.get(f, ())) for f in fields]
    rest = " ".join(m for key, messages in errors.items() if key not in fields for m in messages)
    return beside, rest


# -- components -----------------------------------------------------------------------------


def field(form: str, name: str, label: str, control: object, hint: object = None) -> html.Div:
    """A labelled control with the line for its validation error under it."""
    children = [html.Label(label, className="field-label"), control]
    if hint is not None:
        children.append(hint)
    children.append(html.Div("", id=error_id(form, name), className="field-error", role="alert"))
    return html.Div(children, className="field", id=f"alerts-{form}-field-{name}")


def _action_button(target: str, action: str) -> html.Button | dcc.ConfirmDialogProvider:
    button = html.Button(ACTION_LABELS[action], id=button_id(target, action), className="button small", hidden=True)
    if action != "delete":
        return button
    # Deleting cannot be undone (a rule's episodes and delivery log go with it): the browser asks first.
    message = messages.ALERTS_CONFIRM_DELETE[target]
    return dcc.ConfirmDialogProvider(button, id=trigger(target, action)[0], message=message)


def _actions(target: str) -> html.Span:
    return html.Span([_action_button(target, action) for t, action in ACTIONS if t == target], className="actions")


def _listing(target: str, title: str, columns: list[dict[str, object]]) -> html.Section:
    return html.Section(
        [
            html.Div(
                [html.H2(title), html.Span("", id=f"alerts-{target}-hint", className="hint"), _actions(target)],
                className="panel-head",
            ),
            html.P("", id=f"{TABLE_IDS[target]}-empty", className="empty-note", hidden=True),
            table(TABLE_IDS[target], columns, page_size=20, row_selectable="multi", selected_rows=[]),
        ],
        className="panel",
    )


def _rule_form() -> html.Section:
    form = "rule"
    return html.Section(
        [
            html.H2("New alert rule"),
            html.Div(
                [
                    field(form, "name", "Name", dcc.Input(id="alerts-rule-name", type="text", maxLength=100)),
                    field(form, "kind", "Kind", dcc.Dropdown(
                        id="alerts-rule-kind", options=[{"label": v, "value": k} for k, v in RULE_KINDS],
                        value=RULE_KINDS[0][0], clearable=False,
                    )),
                    field(form, "threshold", "Threshold", dcc.Input(id="alerts-rule-threshold", type="number", min=0),
                          html.Div("", id="alerts-rule-threshold-hint", className="hint")),
                    field(form, "window_minutes", "Window (minutes)",
                          dcc.Input(id="alerts-rule-window", type="number", min=5, max=1440, step=1, value=60)),
                    field(form, "scope", "Watch", dcc.RadioItems(
                        id="alerts-rule-scope", options=[{"label": v, "value": k} for k, v in SPIKE_SCOPES],
                        value="", className="segmented",
                    )),
                    field(form, "value", "Page path or referrer domain (empty: any)",
                          dcc.Input(id="alerts-rule-value", type="text", maxLength=512)),
                    field(form, "goal", "Goal", dcc.Dropdown(id="alerts-rule-goal", options=[])),
                    field(form, "max_per_day", "Delivered per day at most",
                          dcc.Input(id="alerts-rule-max", type="number", min=0, step=1, value=3)),
                    field(form, "channels", "Deliver to", dcc.Checklist(id="alerts-rule-channels", options=[],
                                                                        value=[], className="segmented")),
                ],
                className="form-grid",
            ),
            _submit(form, "Create rule"),
        ],
        className="panel",
        id="alerts-rule-form",
        hidden=True,
    )  # fmt: skip


def _channel_form() -> html.Section:
    form = "channel"
    return html.Section(
        [
            html.H2("New channel"),
            html.Div(
                [
                    field(form, "name", "Name", dcc.Input(id="alerts-channel-name", type="text", maxLength=100)),
                    field(form, "kind", "Kind", dcc.RadioItems(
                        id="alerts-channel-kind", options=[{"label": "email", "value": EMAIL},
                                                           {"label": "webhook", "value": WEBHOOK}],
                        value=EMAIL, className="segmented",
                    )),
                    field(form, "email", "Recipient", dcc.Input(id="alerts-channel-email", type="email")),
                    field(form, "url", "Endpoint URL (http or https)",
                          dcc.Input(id="alerts-channel-url", type="url", maxLength=2000)),
                    field(form, "slack", "Body", dcc.Checklist(
                        id="alerts-channel-slack", options=[{"label": "Slack-compatible", "value": "on"}], value=[],
                    )),
                ],
                className="form-grid",
            ),
            _submit(form, "Create channel"),
        ],
        className="panel",
        id="alerts-channel-form",
        hidden=True,
    )  # fmt: skip


def _subscription_form() -> html.Section:
    form = "subscription"
    return html.Section(
        [
            html.H2("New report subscription"),
            html.Div(
                [
                    field(form, "email", "Recipient", dcc.Input(id="alerts-subscription-email", type="email")),
                    field(form, "frequency", "Report", dcc.RadioItems(
                        id="alerts-subscription-frequency",
                        options=[{"label": "weekly (Mondays)", "value": "weekly"},
                                 {"label": "monthly (the 1st)", "value": "monthly"}],
                        value="weekly", className="segmented",
                    )),
                ],
                className="form-grid",
            ),
            _submit(form, "Subscribe"),
        ],
        className="panel",
        id="alerts-subscription-form",
        hidden=True,
    )  # fmt: skip


def _submit(form: str, label: str) -> html.Div:
    return html.Div(
        [
            html.Button(label, id=f"alerts-{form}-create", className="button"),
            html.Span("", id=f"alerts-{form}-created", className="status", role="status"),
            html.Div("", id=error_id(form, "form"), className="field-error", role="alert"),
        ],
        className="form-actions",
    )


def alerts_page() -> html.Div:
    return html.Div(
        [
            dcc.Interval(id="alerts-tick", interval=REFRESH_MS),
            # Bumped by each change (one store per writer), so the lists are read again.
            *[dcc.Store(id=f"alerts-version-{name}", data=0) for name in ("act", *FORMS)],
            html.Div([html.H1("Alerts"), html.Span("Loading…", id="alerts-status", className="status")],
                     className="page-head"),
            alert("alerts-error"),
            html.Div("", id="alerts-act-result", className="status", role="status"),
            html.Section(
                [
                    html.H2("Open now"),
                    html.P("", id="alerts-open-empty", className="empty-note", hidden=True),
                    table("alerts-open", [
                        {"name": "Rule", "id": "rule"}, {"name": "What", "id": "summary"},
                        {"name": "Since (site time)", "id": "since"}, {"name": "Value vs threshold", "id": "value"},
                        {"name": "Peak", "id": "peak"}, {"name": "Delivered", "id": "delivered"},
                    ], page_size=20),
                ],
                className="panel",
            ),
            _listing("rule", "Rules", [
                {"name": "Name", "id": "name"}, {"name": "Kind", "id": "kind"}, {"name": "Watches", "id": "subject"},
                {"name": "Threshold", "id": "threshold"}, {"name": "Window", "id": "window"},
                {"name": "Channels", "id": "channels"}, {"name": "Per day", "id": "max_per_day"},
                {"name": "Enabled", "id": "enabled"}, {"name": "State", "id": "state"},
            ]),
            html.Section(
                [
                    html.H2("Past episodes"),
                    html.P("", id="alerts-past-empty", className="empty-note", hidden=True),
                    table("alerts-past", [
                        {"name": "Rule", "id": "rule"}, {"name": "What", "id": "summary"},
                        {"name": "Opened", "id": "opened"}, {"name": "Resolved", "id": "resolved"},
                        {"name": "Lasted", "id": "lasted"}, {"name": "Value vs threshold", "id": "value"},
                        {"name": "Peak", "id": "peak"}, {"name": "Delivered", "id": "delivered"},
                    ], page_size=20),
                ],
                className="panel",
            ),
            _listing("channel", "Channels", [
                {"name": "Name", "id": "name"}, {"name": "Kind", "id": "kind"}, {"name": "To", "id": "target"},
                {"name": "Enabled", "id": "enabled"},
            ]),
            _listing("subscription", "Report subscriptions", [
                {"name": "Recipient", "id": "email"}, {"name": "Report", "id": "frequency"},
                {"name": "Status", "id": "status"}, {"name": "Last sent", "id": "last_period"},
            ]),
            _rule_form(),
            _channel_form(),
            _subscription_form(),
        ],
        id="alerts-page",
    )  # fmt: skip


def alerts_refused() -> html.Div:
    return html.Div([html.H2("Alerts"), html.P(messages.ALERTS_SIGNED_IN)], className="empty", id="alerts-refused")
