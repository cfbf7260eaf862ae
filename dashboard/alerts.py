"""The Alerts page: a site's rules, open and past episodes, channels and report subscriptions,
and the forms that add them; its layout and its callbacks (the rows of its tables are
:mod:`dashboard.alerts_rows`).

Who may do what is decided here, on the server, for every callback: the site must be one the
signed-in user was granted (:meth:`~dashboard.access.Access.alerts_site`), and each change
needs the Django model permission it implies (``add_``/``change_``/``delete_`` of
``alertrule``, ``channel`` or ``reportsubscription`` of the ``footfall_alerts`` app), so a
forged callback changes nothing that a hidden button would not. Ids sent by the browser are
only looked up among the site's own rows (:mod:`alerts.site_alerts`). Every value from a row
is placed as a DataTable cell or a component's text, both rendered as text.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Mapping, Sequence
from zoneinfo import ZoneInfo

from dash import Dash, Input, Output, State, ctx, dcc, html, no_update
from django.core.exceptions import ValidationError

from alerts import site_alerts
from alerts.models import EMAIL, RULE_KINDS, SPIKE_SCOPES, THRESHOLD_MEANING, WEBHOOK
from dashboard import alerts_rows, messages
from dashboard.access import Access, SiteChoice, current
from dashboard.callbacks import Callbacks
from dashboard.components import alert, table
from dashboard.definitions import in_worker

log = logging.getLogger(__name__)
callbacks = Callbacks()
MODEL_NAMES = {"rule": "alertrule", "channel": "channel", "subscription": "reportsubscription"}
VERBS = {"create": "add", "enable": "change", "disable": "change", "delete": "delete"}
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


def permission(target: str, action: str) -> str:
    """The Django permission ``action`` (create, enable, disable, delete) on ``target`` needs."""
    return f"footfall_alerts.{VERBS[action]}_{MODEL_NAMES[target]}"


def field_errors(form: str, errors: Mapping[str, Sequence[str]]) -> tuple[list[str], str]:
    """Split a ValidationError's ``message_dict`` into the texts shown next to each field of
    ``form`` (in :data:`FORMS` order) and the rest, shown on the form's own line."""
    fields = FORMS[form]
    beside = [" ".join(errors.get(f, ())) for f in fields]
    rest = " ".join(m for key, messages in errors.items() if key not in fields for m in messages)
    return beside, rest


# -- layout ---------------------------------------------------------------------------------


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
            _form_actions(form, "Create rule"),
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
            _form_actions(form, "Create channel"),
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
            _form_actions(form, "Subscribe"),
        ],
        className="panel",
        id="alerts-subscription-form",
        hidden=True,
    )  # fmt: skip


def _form_actions(form: str, label: str) -> html.Div:
    return html.Div(
        [
            html.Button(label, id=f"alerts-{form}-create", className="button"),
            html.Span("", id=f"alerts-{form}-created", className="status", role="status"),
            html.Div("", id=error_id(form, "form"), className="field-error", role="alert"),
        ],
        className="form-actions",
    )


def page() -> html.Div:
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


def refused() -> html.Div:
    return html.Div([html.H2("Alerts"), html.P(messages.ALERTS_SIGNED_IN)], className="empty", id="alerts-refused")


# -- reading --------------------------------------------------------------------------------

LISTINGS = ("rule", "channel", "subscription")
REFRESH_OUTPUTS = [
    Output("alerts-status", "children"),
    Output("alerts-error", "children"),
    Output("alerts-error", "hidden"),
    Output("alerts-open", "data"),
    Output("alerts-open-empty", "children"),
    Output("alerts-open-empty", "hidden"),
    Output("alerts-past", "data"),
    Output("alerts-past-empty", "children"),
    Output("alerts-past-empty", "hidden"),
    *[o for t in LISTINGS for o in (
        Output(TABLE_IDS[t], "data"),
        Output(TABLE_IDS[t], "selected_rows"),
        Output(f"{TABLE_IDS[t]}-empty", "children"),
        Output(f"{TABLE_IDS[t]}-empty", "hidden"),
        Output(f"alerts-{t}-hint", "children"),
    )],
    *[Output(button_id(t, a), "hidden") for t, a in ACTIONS],
    *[Output(f"alerts-{form}-form", "hidden") for form in FORMS],
    Output("alerts-rule-channels", "options"),
    Output("alerts-rule-goal", "options"),
]  # fmt: skip
EMPTY_TEXTS = {"rule": messages.NO_RULES, "channel": messages.NO_CHANNELS, "subscription": messages.NO_SUBSCRIPTIONS}


def _refused_outputs(text: str) -> tuple:
    """Every list emptied and every control hidden, with ``text`` saying why."""
    lists = [value for _ in LISTINGS for value in ([], [], "", True, "")]
    hidden = [True] * (len(ACTIONS) + len(FORMS))
    return ("", text, False, [], "", True, [], "", True, *lists, *hidden, [], [])


@callbacks.callback(
    *REFRESH_OUTPUTS,
    Input("site", "value"),
    Input("alerts-tick", "n_intervals"),
    *[Input(f"alerts-version-{name}", "data") for name in ("act", *FORMS)],
)
def refresh(site_id: str | None, *_changes: object) -> tuple:
    """The site's rules, episodes, channels and subscriptions, with the controls the user's
    permissions allow (the change callbacks check them again)."""
    access = current()
    site = access.alerts_site(site_id)
    if site is None:
        return _refused_outputs(messages.ALERTS_CHOOSE_SITE if access.signed_in else messages.ALERTS_SIGNED_IN)
    tz = ZoneInfo(site.tz)
    try:
        rows = in_worker(lambda: _rows(site.site_id, tz))
    except Exception as exc:
        log.exception("alerts of %s failed", site.site_id)
        return _refused_outputs(messages.problem(exc))
    lists = []
    for target in LISTINGS:
        may_act = any(access.may(permission(target, a)) for t, a in ACTIONS if t == target)
        hint = "Select rows, then act on them." if may_act and rows[target] else ""
        lists += [rows[target], [], EMPTY_TEXTS[target], bool(rows[target]), hint]
    buttons = [not access.may(permission(t, a)) for t, a in ACTIONS]
    forms = [not access.may(permission(form, "create")) for form in FORMS]
    read_only = all(buttons) and all(forms)
    opened, past = rows["open"], rows["past"]
    status = f"{site.name} · times in {tz.key}" + (" · read-only" if read_only else "")
    return (
        status, messages.ALERTS_READ_ONLY if read_only else "", not read_only,
        opened, messages.NO_OPEN_EPISODES, bool(opened),
        past, messages.NO_PAST_EPISODES, bool(past),
        *lists, *buttons, *forms,
        rows["channel_options"], rows["goal_options"],
    )  # fmt: skip


def _rows(site_id: str, tz: ZoneInfo) -> dict[str, list[dict[str, object]]]:
    """The rows of the page's tables and the form's choices, read in one go (on the ORM pool:
    related rows are loaded there too)."""
    data = site_alerts.overview(site_id)
    return {
        "rule": alerts_rows.rule_rows(data.rules, {e.rule_id for e in data.open_episodes}),
        "channel": alerts_rows.channel_rows(data.channels),
        "subscription": alerts_rows.subscription_rows(data.subscriptions, tz),
        "open": alerts_rows.open_rows(data.open_episodes, tz, dt.datetime.now(dt.UTC)),
        "past": alerts_rows.past_rows(data.past_episodes, tz),
        "channel_options": [{"label": f"{c.name} ({c.kind})", "value": c.pk} for c in data.channels],
        "goal_options": [{"label": g.name, "value": g.pk} for g in data.goals],
    }


# -- changing -------------------------------------------------------------------------------


def _allowed(access: Access, site_id: object, target: str, action: str) -> tuple[SiteChoice | None, str]:
    """The site to change and "", or None and why not (not granted, or no permission)."""
    site = access.alerts_site(site_id)
    if site is None:
        return None, messages.ALERTS_CHOOSE_SITE if access.signed_in else messages.ALERTS_SIGNED_IN
    needed = permission(target, action)
    if not access.may(needed):
        return None, messages.ALERTS_REFUSED.format(permission=needed)
    return site, ""


@callbacks.callback(
    Output("alerts-version-act", "data"),
    Output("alerts-act-result", "children"),
    *[Input(*trigger(t, a)) for t, a in ACTIONS],
    State("site", "value"),
    *[State(TABLE_IDS[t], "selected_row_ids") for t in LISTINGS],
    State("alerts-version-act", "data"),
    prevent_initial_call=True,
)
def act(*args: object) -> tuple:
    """Enable, disable or delete the selected rows of one table."""
    site_id, *selected, version = args[len(ACTIONS) :]
    pressed = ctx.triggered_id
    action = next(((t, a) for t, a in ACTIONS if trigger(t, a)[0] == pressed), None)
    if action is None:
        return no_update, no_update
    target, verb = action
    site, why = _allowed(current(), site_id, target, verb)
    if site is None:
        return no_update, why
    ids = selected[LISTINGS.index(target)]
    if not isinstance(ids, list) or not ids:
        return no_update, messages.ALERTS_NOTHING_SELECTED
    if verb == "delete":
        count = in_worker(lambda: site_alerts.delete(site.site_id, target, ids))
    else:
        count = in_worker(lambda: site_alerts.set_enabled(site.site_id, target, ids, verb == "enable"))
    noun = "subscription" if target == "subscription" else target
    done = {"delete": "deleted", "enable": "enabled", "disable": "disabled"}[verb]
    return (version or 0) + 1, f"{count} {noun}{'' if count == 1 else 's'} {done}."


def _form_outputs(form: str) -> list[Output]:
    return [
        *[Output(error_id(form, f), "children") for f in FORMS[form]],
        Output(error_id(form, "form"), "children"),
        Output(f"alerts-{form}-created", "children"),
        Output(f"alerts-version-{form}", "data"),
    ]


def _submit(form: str, site_id: object, version: object, save: Callable[[str], str]) -> tuple:
    """Run ``save(site_id)`` if allowed; the form's error texts, its status and new version."""
    blank = [""] * len(FORMS[form])
    site, why = _allowed(current(), site_id, form, "create")
    if site is None:
        return (*blank, why, "", no_update)
    try:
        created = in_worker(lambda: save(site.site_id))
    except ValidationError as exc:
        beside, rest = field_errors(form, exc.message_dict)
        return (*beside, rest, "", no_update)
    return (*blank, "", created, (version if isinstance(version, int) else 0) + 1)


@callbacks.callback(
    Output("alerts-rule-threshold-hint", "children"),
    Output("alerts-rule-field-window_minutes", "hidden"),
    Output("alerts-rule-field-scope", "hidden"),
    Output("alerts-rule-field-value", "hidden"),
    Output("alerts-rule-field-goal", "hidden"),
    Input("alerts-rule-kind", "value"),
    Input("alerts-rule-scope", "value"),
)
def rule_fields(kind: str | None, scope: str | None) -> tuple:
    """Only the fields the chosen kind uses (spikes: scope and value; goal rules: a goal)."""
    spike = kind == "spike"
    return (
        THRESHOLD_MEANING.get(kind or "", ""), kind not in site_alerts.WINDOWED_KINDS,
        not spike, not (spike and scope), kind != "goal",
    )  # fmt: skip


@callbacks.callback(
    Output("alerts-channel-field-email", "hidden"),
    Output("alerts-channel-field-url", "hidden"),
    Output("alerts-channel-field-slack", "hidden"),
    Input("alerts-channel-kind", "value"),
)
def channel_fields(kind: str | None) -> tuple:
    webhook = kind == WEBHOOK
    return webhook, not webhook, not webhook


@callbacks.callback(
    *_form_outputs("rule"),
    Input("alerts-rule-create", "n_clicks"),
    State("site", "value"),
    State("alerts-rule-name", "value"),
    State("alerts-rule-kind", "value"),
    State("alerts-rule-threshold", "value"),
    State("alerts-rule-window", "value"),
    State("alerts-rule-scope", "value"),
    State("alerts-rule-value", "value"),
    State("alerts-rule-goal", "value"),
    State("alerts-rule-max", "value"),
    State("alerts-rule-channels", "value"),
    State("alerts-version-rule", "data"),
    prevent_initial_call=True,
)
def create_rule(_n: int | None, site_id: str | None, name: object, kind: object, threshold: object,
                window: object, scope: object, value: object, goal: object, max_per_day: object,
                channels: object, version: object) -> tuple:  # fmt: skip
    spike = kind == "spike"
    data = {
        "name": name, "kind": kind, "threshold": threshold, "window_minutes": window,
        # Fields the kind hides are not sent: what stays in a hidden input is not the rule's.
        "scope": scope if spike else "", "value": value if spike and scope else "",
        "goal": goal if kind == "goal" else None, "max_per_day": max_per_day, "channels": channels,
    }  # fmt: skip

    def save(site: str) -> str:
        rule = site_alerts.create_rule(site, data)
        return f"Rule “{rule.name}” created."

    return _submit("rule", site_id, version, save)


@callbacks.callback(
    *_form_outputs("channel"),
    Input("alerts-channel-create", "n_clicks"),
    State("site", "value"),
    State("alerts-channel-name", "value"),
    State("alerts-channel-kind", "value"),
    State("alerts-channel-email", "value"),
    State("alerts-channel-url", "value"),
    State("alerts-channel-slack", "value"),
    State("alerts-version-channel", "data"),
    prevent_initial_call=True,
)
def create_channel(_n: int | None, site_id: str | None, name: object, kind: object, email: object,
                   url: object, slack: object, version: object) -> tuple:  # fmt: skip
    webhook = kind == WEBHOOK
    data = {
        "name": name, "kind": kind, "email": "" if webhook else email, "url": url if webhook else "",
        "slack": webhook and isinstance(slack, list) and "on" in slack,
    }  # fmt: skip

    def save(site: str) -> str:
        channel = site_alerts.create_channel(site, data)
        if channel.kind == WEBHOOK:
            return messages.WEBHOOK_CREATED.format(name=channel.name, secret=channel.secret)
        return f"Channel “{channel.name}” created."

    return _submit("channel", site_id, version, save)


@callbacks.callback(
    *_form_outputs("subscription"),
    Input("alerts-subscription-create", "n_clicks"),
    State("site", "value"),
    State("alerts-subscription-email", "value"),
    State("alerts-subscription-frequency", "value"),
    State("alerts-version-subscription", "data"),
    prevent_initial_call=True,
)
def create_subscription(_n: int | None, site_id: str | None, email: object, frequency: object,
                        version: object) -> tuple:  # fmt: skip
    def save(site: str) -> str:
        subscription = site_alerts.create_subscription(site, {"email": email, "frequency": frequency})
        return f"{subscription.email} will receive the {subscription.frequency} report."

    return _submit("subscription", site_id, version, save)


def register(app: Dash) -> None:
    """Register the page's callbacks on ``app``."""
    callbacks.register(app)
