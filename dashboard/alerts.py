"""Callbacks of the Alerts page (layout in :mod:`dashboard.alerts_layout`).

Who may do what is decided here, on the server, for every callback: the site must be one the
signed-in user was granted (:meth:`~dashboard.access.Access.alerts_site`), and each change
needs the Django model permission it implies (``add_``/``change_``/``delete_`` of
``alertrule``, ``channel`` or ``reportsubscription`` of the ``footfall_alerts`` app), so a
forged callback changes nothing that a hidden button would not. Ids sent by the browser are
only looked up among the site's own rows (:mod:`alerts.site_alerts`).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from zoneinfo import ZoneInfo

from dash import Dash, Input, Output, State, ctx, no_update
from django.core.exceptions import ValidationError

from alerts import site_alerts
from alerts.models import THRESHOLD_MEANING, WEBHOOK
from dashboard import alerts_layout as ui
from dashboard import messages
from dashboard.access import Access, SiteChoice, current
from dashboard.definitions import in_worker

log = logging.getLogger(__name__)
MODEL_NAMES = {"rule": "alertrule", "channel": "channel", "subscription": "reportsubscription"}
VERBS = {"create": "add", "enable": "change", "disable": "change", "delete": "delete"}


def permission(target: str, action: str) -> str:
    """The Django permission ``action`` (create, enable, disable, delete) on ``target`` needs."""
    return f"footfall_alerts.{VERBS[action]}_{MODEL_NAMES[target]}"


def register(app: Dash) -> None:
    _register_refresh(app)
    _register_actions(app)
    _register_forms(app)


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
        Output(ui.TABLE_IDS[t], "data"),
        Output(ui.TABLE_IDS[t], "selected_rows"),
        Output(f"{ui.TABLE_IDS[t]}-empty", "children"),
        Output(f"{ui.TABLE_IDS[t]}-empty", "hidden"),
        Output(f"alerts-{t}-hint", "children"),
    )],
    *[Output(ui.button_id(t, a), "hidden") for t, a in ui.ACTIONS],
    *[Output(f"alerts-{form}-form", "hidden") for form in ui.FORMS],
    Output("alerts-rule-channels", "options"),
    Output("alerts-rule-goal", "options"),
]  # fmt: skip
EMPTY_TEXTS = {"rule": messages.NO_RULES, "channel": messages.NO_CHANNELS, "subscription": messages.NO_SUBSCRIPTIONS}


def _refused(text: str) -> tuple:
    """Every list emptied and every control hidden, with ``text`` saying why."""
    lists = [value for _ in LISTINGS for value in ([], [], "", True, "")]
    hidden = [True] * (len(ui.ACTIONS) + len(ui.FORMS))
    return ("", text, False, [], "", True, [], "", True, *lists, *hidden, [], [])


def _register_refresh(app: Dash) -> None:
    @app.callback(
        *REFRESH_OUTPUTS,
        Input("site", "value"),
        Input("alerts-tick", "n_intervals"),
        *[Input(f"alerts-version-{name}", "data") for name in ("act", *ui.FORMS)],
    )
    def refresh(site_id: str | None, *_changes: object) -> tuple:
        """The site's rules, episodes, channels and subscriptions, with the controls the user's
        permissions allow (the change callbacks check them again)."""
        access = current()
        site = access.alerts_site(site_id)
        if site is None:
            return _refused(messages.ALERTS_CHOOSE_SITE if access.signed_in else messages.ALERTS_SIGNED_IN)
        tz = ZoneInfo(site.tz)
        try:
            rows = in_worker(lambda: _rows(site.site_id, tz))
        except Exception as exc:
            log.exception("alerts of %s failed", site.site_id)
            return _refused(messages.problem(exc))
        lists = []
        for target in LISTINGS:
            may_act = any(access.may(permission(target, a)) for t, a in ui.ACTIONS if t == target)
            hint = "Select rows, then act on them." if may_act and rows[target] else ""
            lists += [rows[target], [], EMPTY_TEXTS[target], bool(rows[target]), hint]
        buttons = [not access.may(permission(t, a)) for t, a in ui.ACTIONS]
        forms = [not access.may(permission(form, "create")) for form in ui.FORMS]
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
        "rule": ui.rule_rows(data.rules, {e.rule_id for e in data.open_episodes}),
        "channel": ui.channel_rows(data.channels),
        "subscription": ui.subscription_rows(data.subscriptions, tz),
        "open": ui.open_rows(data.open_episodes, tz, dt.datetime.now(dt.UTC)),
        "past": ui.past_rows(data.past_episodes, tz),
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


def _register_actions(app: Dash) -> None:
    @app.callback(
        Output("alerts-version-act", "data"),
        Output("alerts-act-result", "children"),
        *[Input(*ui.trigger(t, a)) for t, a in ui.ACTIONS],
        State("site", "value"),
        *[State(ui.TABLE_IDS[t], "selected_row_ids") for t in LISTINGS],
        State("alerts-version-act", "data"),
        prevent_initial_call=True,
    )
    def act(*args: object) -> tuple:
        """Enable, disable or delete the selected rows of one table."""
        site_id, *selected, version = args[len(ui.ACTIONS) :]
        pressed = ctx.triggered_id
        action = next(((t, a) for t, a in ui.ACTIONS if ui.trigger(t, a)[0] == pressed), None)
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
        *[Output(ui.error_id(form, f), "children") for f in ui.FORMS[form]],
        Output(ui.error_id(form, "form"), "children"),
        Output(f"alerts-{form}-created", "children"),
        Output(f"alerts-version-{form}", "data"),
    ]


def _submit(form: str, site_id: object, version: object, save: Callable[[str], str]) -> tuple:
    """Run ``save(site_id)`` if allowed; the form's error texts, its status and new version."""
    blank = [""] * len(ui.FORMS[form])
    site, why = _allowed(current(), site_id, form, "create")
    if site is None:
        return (*blank, why, "", no_update)
    try:
        created = in_worker(lambda: save(site.site_id))
    except ValidationError as exc:
        beside, rest = ui.field_errors(form, exc.message_dict)
        return (*beside, rest, "", no_update)
    return (*blank, "", created, (version if isinstance(version, int) else 0) + 1)


def _register_forms(app: Dash) -> None:
    @app.callback(
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

    @app.callback(
        Output("alerts-channel-field-email", "hidden"),
        Output("alerts-channel-field-url", "hidden"),
        Output("alerts-channel-field-slack", "hidden"),
        Input("alerts-channel-kind", "value"),
    )
    def channel_fields(kind: str | None) -> tuple:
        webhook = kind == WEBHOOK
        return webhook, not webhook, not webhook

    @app.callback(
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

    @app.callback(
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

    @app.callback(
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
