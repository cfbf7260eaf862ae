"""The Alerts page's callbacks, posted as Dash's renderer posts them through Django's login:
what a site's rules and episodes look like to whom, the forms' stores and errors, and that
the permissions are enforced by the callbacks themselves (forged calls change nothing)."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client

from alerts.models import THRESHOLD_MEANING, AlertRule, Channel, Episode, ReportSubscription
from dashboard import messages
from dashboard.access import ALERT_PERMISSIONS
from dashboard.alerts import ACTIONS, REFRESH_OUTPUTS, RULE_FIELDS, TABLE_IDS, button_id, error_id, permission, trigger
from dashboard.models import ShareLink, SiteAccess
from footfall.models import Goal, Site
from tests.integration.dash_callbacks import post_callback as post

PASSWORD = "correct horse battery staple 42"


@dataclass
class World:
    site: Site
    other: Site
    rule: AlertRule  # of site, with an open and a resolved episode
    other_rule: AlertRule  # of other, with an open episode
    channel: Channel
    goal: Goal
    other_goal: Goal


@pytest.fixture
def world(transactional_db: None) -> World:
    """Committed rows (the dashboard reads them on its own ORM threads): two sites, each with
    rules and episodes, channels, subscriptions and a goal."""
    now = dt.datetime.now(dt.UTC).replace(second=0, microsecond=0)  # the page counts whole minutes ago
    site = Site.objects.create(site_id="alerts-a", name="Shop", domains=["a.example"], timezone="Europe/Berlin")
    other = Site.objects.create(site_id="alerts-b", name="Blog", domains=["b.example"])
    channel = Channel.objects.create(site=site, name="ops mail", kind="email", email="ops@a.example")
    hook = Channel.objects.create(
        site=site, name="chat", kind="webhook", url="https://hooks.example/services/T0/B0/SECRETPATH", slack=True
    )
    rule = AlertRule.objects.create(site=site, name="Pricing spike", kind="spike", threshold=3, window_minutes=30,
                                    scope="page", value="/pricing")  # fmt: skip
    rule.channels.set([channel, hook])
    AlertRule.objects.create(site=site, name="Realtime lag", kind="realtime_lag", threshold=120, enabled=False)
    rising = {"summary": "/pricing is rising: 4.5 sigma over its usual level", "threshold": 3}
    Episode.objects.create(rule=rule, opened_at=now - dt.timedelta(minutes=95), value=4.5, peak=6.25, details=rising)
    Episode.objects.create(rule=rule, opened_at=now - dt.timedelta(days=2, hours=3),
                           resolved_at=now - dt.timedelta(days=2, hours=1), value=3.5, peak=5, suppressed=True,
                           details={"summary": "<img src=x onerror=alert(1)> was rising"})  # fmt: skip
    other_rule = AlertRule.objects.create(site=other, name="Blog drop", kind="drop", threshold=0.5)
    Episode.objects.create(rule=other_rule, opened_at=now - dt.timedelta(minutes=10), value=0.2, peak=0.1,
                           details={"summary": "Blog traffic fell to a fifth"})  # fmt: skip
    ReportSubscription.objects.create(site=site, email="boss@a.example", frequency="weekly")
    ReportSubscription.objects.create(site=other, email="editor@b.example", frequency="monthly")
    goal = Goal.objects.create(site=site, name="Signup", kind="event", event="signup")
    other_goal = Goal.objects.create(site=other, name="Subscribe", kind="event", event="subscribe")
    return World(site, other, rule, other_rule, channel, goal, other_goal)


def signed_in(name: str, *sites: Site, perms: tuple[str, ...] = (), staff: bool = False) -> Client:
    """A client signed in as a new user granted ``sites`` and holding ``perms``."""
    account = get_user_model().objects.create_user(name, password=PASSWORD, is_staff=staff)
    for s in sites:
        SiteAccess.objects.create(user=account, site=s)
    for perm in perms:
        app_label, codename = perm.split(".")
        account.user_permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))
    client = Client()
    assert client.login(username=name, password=PASSWORD)
    return client


def manager(world: World) -> Client:
    return signed_in("manager", world.site, perms=ALERT_PERMISSIONS)


def refresh(client: Client, site_id: str) -> dict:
    outputs = [(o.component_id, o.component_property) for o in REFRESH_OUTPUTS]
    versions = [(f"alerts-version-{n}", "data", 0) for n in ("act", "rule", "channel", "subscription")]
    return post(client, outputs, [("site", "value", site_id), ("alerts-tick", "n_intervals", None), *versions])


def names(rows: list[dict], key: str = "name") -> list[str]:
    return [r[key] for r in rows]


RULE_STATES = ["name", "kind", "threshold", "window", "scope", "value", "goal", "max", "channels"]


def create_rule(client: Client, site_id: str, **values: object) -> dict:
    form = {"name": None, "kind": "spike", "threshold": None, "window": 60, "scope": "", "value": None,
            "goal": None, "max": 3, "channels": [], **values}  # fmt: skip
    outputs = [(error_id("rule", f), "children") for f in (*RULE_FIELDS, "form")]
    outputs += [("alerts-rule-created", "children"), ("alerts-version-rule", "data")]
    state = [("site", "value", site_id), *[(f"alerts-rule-{k}", "value", form[k]) for k in RULE_STATES]]
    return post(client, outputs, [("alerts-rule-create", "n_clicks", 1)], [*state, ("alerts-version-rule", "data", 0)])


def act(client: Client, site_id: str, target: str, action: str, ids: list[object]) -> dict:
    selected = {t: (ids if t == target else []) for t in TABLE_IDS}
    return post(
        client,
        [("alerts-version-act", "data"), ("alerts-act-result", "children")],
        [(*trigger(t, a), 1 if (t, a) == (target, action) else None) for t, a in ACTIONS],
        [("site", "value", site_id), *[(TABLE_IDS[t], "selected_row_ids", selected[t]) for t in TABLE_IDS],
         ("alerts-version-act", "data", 0)],
        changed=".".join(trigger(target, action)),
    )  # fmt: skip


def test_page_lists_the_rules_and_episodes_of_an_allowed_site(world: World) -> None:
    """A granted viewer sees the site's rules (threshold in words), open and past episodes,
    channels and subscriptions, nothing of another site, and no controls to change them."""
    body = refresh(signed_in("viewer", world.site), world.site.site_id)
    rules = body["alerts-rules"]["data"]
    assert names(rules) == ["Pricing spike", "Realtime lag"]
    spike = rules[0]
    assert spike["threshold"] == f"3 — {THRESHOLD_MEANING['spike']}"
    assert (spike["subject"], spike["window"], spike["enabled"], spike["state"]) == ("page /pricing", "30 min", "on",
                                                                                     "firing")  # fmt: skip
    assert spike["channels"] == "ops mail, chat"
    assert (rules[1]["window"], rules[1]["enabled"], rules[1]["state"]) == ("—", "off", "ok")
    [opened] = body["alerts-open"]["data"]
    assert opened["summary"] == "/pricing is rising: 4.5 sigma over its usual level"
    assert opened["value"] == "4.5 vs 3"
    assert opened["since"].endswith("(1 h 35 min ago)")
    [past] = body["alerts-past"]["data"]
    assert past["summary"] == "<img src=x onerror=alert(1)> was rising"  # a table cell: text, never markup
    assert (past["lasted"], past["delivered"]) == ("2 h 0 min", "no: over the daily limit")
    assert [c["target"] for c in body["alerts-channels"]["data"]] == ["ops@a.example", "https://hooks.example/…"]
    assert names(body["alerts-subs"]["data"], "email") == ["boss@a.example"]
    assert "Blog" not in json.dumps(body)
    assert "editor@b.example" not in json.dumps(body)
    assert body["alerts-error"] == {"children": messages.ALERTS_READ_ONLY, "hidden": False}
    assert all(body[button_id(t, a)]["hidden"] for t, a in ACTIONS)
    assert all(body[f"alerts-{f}-form"]["hidden"] for f in ("rule", "channel", "subscription"))


def test_a_site_not_granted_shows_nothing(world: World) -> None:
    """Forging another site's id, or holding only a share link, lists nothing of it."""
    body = refresh(signed_in("viewer", world.site, perms=ALERT_PERMISSIONS), world.other.site_id)
    assert body["alerts-error"] == {"children": messages.ALERTS_CHOOSE_SITE, "hidden": False}
    for table_id in ("alerts-rules", "alerts-open", "alerts-past", "alerts-channels", "alerts-subs"):
        assert body[table_id]["data"] == []
    assert "Blog" not in json.dumps(body)
    visitor = Client()
    _, token = ShareLink.issue(world.site, "press")
    visitor.get(f"/dashboard/share/{token}")
    body = refresh(visitor, world.site.site_id)
    assert body["alerts-error"]["children"] == messages.ALERTS_SIGNED_IN
    assert body["alerts-rules"]["data"] == []
    page = post(visitor, [("page", "children")], [("url", "pathname", "/dashboard/alerts")])
    assert "alerts-refused" in json.dumps(page)
    assert "alerts-rules" not in json.dumps(page)


def test_creating_a_rule_through_the_form_stores_it(world: World) -> None:
    """A manager's spike rule on one referrer, delivered to a channel, is stored and then listed."""
    client = manager(world)
    assert refresh(client, world.site.site_id)["alerts-rule-form"]["hidden"] is False
    body = create_rule(client, world.site.site_id, name="News spike", threshold=2.5, window=15, scope="ref",
                       value="news.example", channels=[world.channel.pk])  # fmt: skip
    assert body["alerts-rule-created"]["children"] == "Rule “News spike” created."
    assert body["alerts-version-rule"]["data"] == 1
    assert all(body[error_id("rule", f)]["children"] == "" for f in (*RULE_FIELDS, "form"))
    rule = AlertRule.objects.get(site=world.site, name="News spike")
    assert (rule.kind, rule.threshold, rule.window_minutes, rule.scope, rule.value) == ("spike", 2.5, 15, "ref",
                                                                                        "news.example")  # fmt: skip
    assert list(rule.channels.all()) == [world.channel]
    body = create_rule(client, world.site.site_id, name="Signups low", kind="goal", threshold=5, goal=world.goal.pk,
                       scope="page", value="/ignored")  # fmt: skip
    goal_rule = AlertRule.objects.get(site=world.site, name="Signups low")
    assert (goal_rule.goal, goal_rule.scope, goal_rule.value) == (world.goal, "", "")  # hidden fields are not sent
    listed = names(refresh(client, world.site.site_id)["alerts-rules"]["data"])
    assert listed == ["Pricing spike", "Realtime lag", "News spike", "Signups low"]


@pytest.mark.parametrize(
    ("values", "field", "says"),
    [
        ({"kind": "drop", "threshold": 2}, "threshold", "a share between 0 and 1"),
        ({"kind": "drop", "threshold": 0.5, "window": 2}, "window_minutes", "between 5 and 1440 minutes"),
        ({"kind": "goal", "threshold": 5}, "goal", "a goal rule names one of the site's goals"),
        ({"kind": "spike", "threshold": None}, "threshold", "a number is required"),
        ({"kind": "spike", "threshold": 3, "name": "Pricing spike"}, "name", "already has one with this name"),
        ({"kind": "spike", "threshold": 3, "name": ""}, "name", "This field cannot be blank."),
        ({"kind": "nonsense", "threshold": 3}, "kind", "is not a valid choice"),
        ({"kind": "spike", "threshold": 3, "max": -1}, "max_per_day", "greater than or equal to 0"),
    ],
)
def test_a_bad_rule_shows_the_error_next_to_its_field(world: World, values: dict, field: str, says: str) -> None:
    """The model's validation, shown beside the field it concerns; nothing is stored."""
    body = create_rule(manager(world), world.site.site_id, **{"name": "Bad rule", **values})
    assert says in body[error_id("rule", field)]["children"]
    assert body["alerts-rule-created"]["children"] == ""
    assert "alerts-version-rule" not in body
    assert AlertRule.objects.filter(site=world.site).count() == 2


def test_ids_of_another_site_are_refused(world: World) -> None:
    """A goal or channel of another site in a forged form is an error, never linked."""
    client = manager(world)
    other_channel = Channel.objects.create(site=world.other, name="blog mail", kind="email", email="b@b.example")
    body = create_rule(client, world.site.site_id, name="Sneaky", kind="goal", threshold=1, goal=world.other_goal.pk,
                       channels=[other_channel.pk])  # fmt: skip
    assert "not a goal of this site" in body[error_id("rule", "goal")]["children"]
    assert "not a channel of this site" in body[error_id("rule", "channels")]["children"]
    assert not AlertRule.objects.filter(name="Sneaky").exists()


def test_a_viewer_without_the_permissions_cannot_change_anything(world: World) -> None:
    """Forged create, disable and delete callbacks of a granted user without the permissions
    are refused by the callbacks themselves, naming the permission; nothing changes."""
    client = signed_in("viewer", world.site)
    body = create_rule(client, world.site.site_id, name="Forged", threshold=3)
    assert body[error_id("rule", "form")]["children"] == messages.ALERTS_REFUSED.format(
        permission="footfall_alerts.add_alertrule"
    )
    assert not AlertRule.objects.filter(name="Forged").exists()
    for target, action, row in [("rule", "delete", world.rule.pk), ("rule", "disable", world.rule.pk),
                                ("channel", "delete", world.channel.pk), ("subscription", "delete", 1)]:  # fmt: skip
        body = act(client, world.site.site_id, target, action, [row])
        assert body == {"alerts-act-result": {"children": messages.ALERTS_REFUSED.format(
            permission=permission(target, action))}}  # fmt: skip
    world.rule.refresh_from_db()
    assert world.rule.enabled
    assert Channel.objects.filter(pk=world.channel.pk).exists()
    assert ReportSubscription.objects.filter(site=world.site).count() == 1


def test_permissions_are_per_change(world: World) -> None:
    """Holding ``add_alertrule`` only creates rules: the form shows, deleting is refused."""
    client = signed_in("author", world.site, perms=("footfall_alerts.add_alertrule",))
    body = refresh(client, world.site.site_id)
    assert body["alerts-rule-form"]["hidden"] is False
    assert body["alerts-channel-form"]["hidden"] is True
    assert body[button_id("rule", "delete")]["hidden"] is True
    assert create_rule(client, world.site.site_id, name="Mine", threshold=4)["alerts-version-rule"]["data"] == 1
    refused = act(client, world.site.site_id, "rule", "delete", [world.rule.pk])["alerts-act-result"]["children"]
    assert "footfall_alerts.delete_alertrule" in refused
    assert AlertRule.objects.filter(pk=world.rule.pk).exists()


def test_a_manager_of_one_site_cannot_touch_another(world: World) -> None:
    """With every permission but only site A granted: site B is refused, and B's ids sent
    with site A change nothing."""
    client = manager(world)
    assert act(client, world.other.site_id, "rule", "delete", [world.other_rule.pk])["alerts-act-result"] == {
        "children": messages.ALERTS_CHOOSE_SITE
    }
    body = act(client, world.site.site_id, "rule", "delete", [world.other_rule.pk, "1; drop table"])
    assert body["alerts-act-result"]["children"] == "0 rules deleted."
    assert AlertRule.objects.filter(pk=world.other_rule.pk).exists()


def test_enable_disable_and_delete_selected_rows(world: World) -> None:
    client = manager(world)
    assert act(client, world.site.site_id, "rule", "disable", [world.rule.pk])["alerts-act-result"] == {
        "children": "1 rule disabled."
    }
    assert AlertRule.objects.get(pk=world.rule.pk).enabled is False
    assert act(client, world.site.site_id, "channel", "disable", [world.channel.pk])["alerts-version-act"]["data"] == 1
    assert Channel.objects.get(pk=world.channel.pk).enabled is False
    assert (
        "Select one or more rows"
        in act(client, world.site.site_id, "rule", "delete", [])["alerts-act-result"]["children"]
    )
    act(client, world.site.site_id, "rule", "delete", [world.rule.pk])
    assert not AlertRule.objects.filter(pk=world.rule.pk).exists()
    assert not Episode.objects.filter(rule_id=world.rule.pk).exists()
    body = refresh(client, world.site.site_id)
    assert names(body["alerts-rules"]["data"]) == ["Realtime lag"]
    assert body["alerts-open"]["data"] == []
    assert body["alerts-open-empty"] == {"children": messages.NO_OPEN_EPISODES, "hidden": False}


def test_channels_and_subscriptions_through_the_forms(world: World) -> None:
    """A webhook channel shows its secret once; a bad URL and a duplicate subscription are
    errors beside their fields; a subscription can be deleted."""
    client = manager(world)
    outputs = [(error_id("channel", f), "children") for f in ("name", "kind", "email", "url", "slack", "form")]
    outputs += [("alerts-channel-created", "children"), ("alerts-version-channel", "data")]

    def channel(**values: object) -> dict:
        form = {"name": "hook", "kind": "webhook", "email": None, "url": None, "slack": [], **values}
        state = [("site", "value", world.site.site_id), *[(f"alerts-channel-{k}", "value", v) for k, v in form.items()]]
        return post(client, outputs, [("alerts-channel-create", "n_clicks", 1)],
                    [*state, ("alerts-version-channel", "data", 0)])  # fmt: skip

    assert "http(s) URL" in channel(url="ftp://x.example/")[error_id("channel", "url")]["children"]
    body = channel(url="https://receiver.example/hook", slack=["on"])
    stored = Channel.objects.get(site=world.site, name="hook")
    assert (stored.kind, stored.url, stored.slack, stored.email) == ("webhook", "https://receiver.example/hook", True,
                                                                     "")  # fmt: skip
    assert stored.secret in body["alerts-channel-created"]["children"]

    outputs_sub = [(error_id("subscription", f), "children") for f in ("email", "frequency", "form")]
    outputs_sub += [("alerts-subscription-created", "children"), ("alerts-version-subscription", "data")]

    def subscribe(email: str, frequency: str) -> dict:
        state = [
            ("site", "value", world.site.site_id),
            ("alerts-subscription-email", "value", email),
            ("alerts-subscription-frequency", "value", frequency),
            ("alerts-version-subscription", "data", 0),
        ]
        return post(client, outputs_sub, [("alerts-subscription-create", "n_clicks", 1)], state)  # fmt: skip

    assert subscribe("cfo@a.example", "monthly")["alerts-version-subscription"]["data"] == 1
    assert "already has one with this email" in subscribe("boss@a.example", "weekly")[
        error_id("subscription", "email")]["children"]  # fmt: skip
    assert "valid email" in subscribe("not an address", "weekly")[error_id("subscription", "email")]["children"]
    sub = ReportSubscription.objects.get(email="cfo@a.example")
    assert act(client, world.site.site_id, "subscription", "delete", [sub.pk])["alerts-act-result"] == {
        "children": "1 subscription deleted."
    }
    assert not ReportSubscription.objects.filter(pk=sub.pk).exists()
