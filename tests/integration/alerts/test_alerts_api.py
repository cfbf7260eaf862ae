"""Alert rules, channels, episodes and report subscriptions through the API: create, list,
change and delete each; what is refused and why; scopes; another site's objects are a 404;
a webhook's secret is shown once."""

from __future__ import annotations

import datetime as dt

import pytest
from django.test import Client

from alerts.models import AlertRule, Channel, Delivery, Episode, ReportSubscription
from footfall.models import Goal
from tests.integration.alerts.conftest import send
from tests.integration.api.conftest import SiteKey, make_site

pytestmark = pytest.mark.django_db
T0 = dt.datetime(2026, 11, 2, 12, 0, tzinfo=dt.UTC)
SPIKE = {"name": "Spike", "kind": "spike", "threshold": 3}


def webhook(client: Client, sk: SiteKey, name: str = "Ops hook") -> dict:
    response = send(client, sk, "POST", "alerts/channels", {"name": name, "kind": "webhook",
                                                            "url": "https://hooks.example.com/ff"})  # fmt: skip
    assert response.status_code == 201, response.content
    return response.json()


def test_a_read_key_changes_nothing(client: Client, site_key: SiteKey) -> None:
    """Every change needs the manage scope: 403, and nothing is written."""
    rule = AlertRule.objects.create(site=site_key.site, name="Lag", kind="realtime_lag", threshold=60)
    channel = Channel.objects.create(site=site_key.site, name="Mail", kind="email", email="ops@example.com")
    sub = ReportSubscription.objects.create(site=site_key.site, email="boss@example.com", frequency="weekly")
    attempts = [
        ("POST", "alerts/rules", SPIKE),
        ("PATCH", f"alerts/rules/{rule.pk}", {"enabled": False}),
        ("DELETE", f"alerts/rules/{rule.pk}", None),
        ("POST", "alerts/channels", {"name": "Hook", "kind": "webhook", "url": "https://x.example.com"}),
        ("DELETE", f"alerts/channels/{channel.pk}", None),
        ("POST", "reports/subscriptions", {"email": "a@example.com", "frequency": "monthly"}),
        ("DELETE", f"reports/subscriptions/{sub.pk}", None),
    ]
    for method, path, body in attempts:
        response = send(client, site_key, method, path, body)
        assert response.status_code == 403, (method, path, response.content)
        assert "manage" in response.json()["error"]["message"]
    assert list(AlertRule.objects.values_list("name", "enabled")) == [("Lag", True)]
    assert list(Channel.objects.values_list("name", flat=True)) == ["Mail"]
    assert list(ReportSubscription.objects.values_list("email", flat=True)) == ["boss@example.com"]
    # Reading is the read scope's.
    for path in ("alerts/rules", f"alerts/rules/{rule.pk}", "alerts/channels", "alerts/episodes",
                 "reports/subscriptions"):  # fmt: skip
        assert site_key.get(client, path).status_code == 200, path


def test_a_key_without_read_scope_reads_nothing(client: Client) -> None:
    ingest_only = make_site(scopes=("ingest",))
    for path in ("alerts/rules", "alerts/channels", "alerts/episodes", "reports/subscriptions"):
        response = ingest_only.get(client, path)
        assert response.status_code == 403, path
        assert "read" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("body", "parameter"),
    [
        ({"kind": "spike", "threshold": 3}, "name"),
        ({"name": 3, "kind": "spike", "threshold": 3}, "name"),
        ({"name": "x", "kind": "sometimes", "threshold": 3}, "kind"),
        ({"name": "x", "kind": "spike"}, "threshold"),
        ({"name": "x", "kind": "spike", "threshold": "high"}, "threshold"),
        ({"name": "x", "kind": "spike", "threshold": -1}, "threshold"),
        ({"name": "x", "kind": "drop", "threshold": 1.5}, "threshold"),
        ({"name": "x", "kind": "spike", "threshold": 3, "window_minutes": 2}, "window_minutes"),
        ({"name": "x", "kind": "spike", "threshold": 3, "window_minutes": 1441}, "window_minutes"),
        ({"name": "x", "kind": "goal", "threshold": 3}, "goal_id"),
        ({"name": "x", "kind": "goal", "threshold": 3, "goal_id": 999999}, "goal_id"),
        ({"name": "x", "kind": "drop", "threshold": 0.5, "scope": "page"}, "scope"),
        ({"name": "x", "kind": "spike", "threshold": 3, "scope": "everything"}, "scope"),
        ({"name": "x", "kind": "spike", "threshold": 3, "value": "/pricing"}, "value"),
        ({"name": "x", "kind": "spike", "threshold": 3, "max_per_day": -1}, "max_per_day"),
        ({"name": "x", "kind": "spike", "threshold": 3, "channels": [999999]}, "channels"),
        ({"name": "x", "kind": "spike", "threshold": 3, "channels": "all"}, "channels"),
        ({"name": "x", "kind": "spike", "threshold": 3, "channels": ["one"]}, "channels"),
        ({"name": "x", "kind": "spike", "threshold": 3, "enabled": "perhaps"}, "enabled"),
        (["not", "an", "object"], "body"),
    ],
)
def test_bad_rules_are_refused_naming_the_field(client: Client, manager: SiteKey, body: object, parameter: str) -> None:
    response = send(client, manager, "POST", "alerts/rules", body)
    assert response.status_code == 400, response.content
    assert response.json()["error"]["parameter"] == parameter, response.content
    assert not AlertRule.objects.exists()


def test_rule_lifecycle(client: Client, manager: SiteKey) -> None:
    """Create, list, read, change (a subset of fields, channels replaced), delete."""
    hook = webhook(client, manager)
    goal = Goal.objects.create(site=manager.site, name="Signup", kind="event", event="signup")
    created = send(client, manager, "POST", "alerts/rules", {
        "name": "Pricing spike", "kind": "spike", "threshold": 3.5, "window_minutes": 30, "scope": "page",
        "value": "/pricing", "channels": [int(hook["channel_id"])],
    })  # fmt: skip
    assert created.status_code == 201, created.content
    rule = created.json()
    assert rule["channels"] == [hook["channel_id"]]
    assert (rule["kind"], rule["threshold"], rule["window_minutes"], rule["scope"], rule["value"]) == (
        "spike", 3.5, 30, "page", "/pricing")  # fmt: skip
    assert (rule["max_per_day"], rule["enabled"], rule["goal_id"], rule["open_episode_id"]) == (3, True, None, None)
    assert "z-score" in rule["threshold_meaning"]
    goal_rule = send(client, manager, "POST", "alerts/rules", {"name": "Few signups", "kind": "goal",
                                                               "threshold": 5, "goal_id": goal.pk})  # fmt: skip
    assert goal_rule.status_code == 201, goal_rule.content
    assert goal_rule.json()["goal_id"] == str(goal.pk)

    listed = manager.get(client, "alerts/rules").json()
    assert listed["site_id"] == manager.site.site_id
    assert [r["name"] for r in listed["results"]] == ["Pricing spike", "Few signups"]
    path = f"alerts/rules/{rule['rule_id']}"
    assert manager.get(client, path).json() == rule

    # A subset of fields; the channel list is replaced as a whole.
    mail = send(client, manager, "POST", "alerts/channels", {"name": "Mail", "kind": "email",
                                                             "email": "ops@example.com"}).json()  # fmt: skip
    patched = send(client, manager, "PATCH", path, {"enabled": False, "threshold": 4, "channels": [
        int(mail["channel_id"]), int(hook["channel_id"])]})  # fmt: skip
    assert patched.status_code == 200, patched.content
    assert (patched.json()["enabled"], patched.json()["threshold"]) == (False, 4.0)
    assert patched.json()["channels"] == [hook["channel_id"], mail["channel_id"]]
    assert patched.json()["value"] == "/pricing"  # untouched
    stored = AlertRule.objects.get(pk=rule["rule_id"])
    assert (stored.enabled, stored.threshold, sorted(c.pk for c in stored.channels.all())) == (
        False, 4.0, sorted([int(hook["channel_id"]), int(mail["channel_id"])]))  # fmt: skip
    assert manager.get(client, path).json() == patched.json()
    assert send(client, manager, "PATCH", path, {"channels": []}).json()["channels"] == []

    # The changed rule is validated as a whole; a refused change changes nothing.
    for body, parameter in (({"kind": "realtime_lag"}, "scope"), ({"name": "Few signups"}, "name"),
                            ({"threshold": None}, "threshold"), ({"goal_id": goal.pk}, "goal_id")):  # fmt: skip
        refused = send(client, manager, "PATCH", path, body)
        assert refused.status_code == 400, (body, refused.content)
        assert refused.json()["error"]["parameter"] == parameter, (body, refused.content)
    assert manager.get(client, path).json()["kind"] == "spike"
    assert send(client, manager, "POST", "alerts/rules", {**SPIKE, "name": "Pricing spike"}).json()["error"] == {
        "parameter": "name", "message": "this site already has a rule of that name"}  # fmt: skip

    assert send(client, manager, "DELETE", path).status_code == 204
    assert manager.get(client, path).status_code == 404
    assert send(client, manager, "DELETE", path).status_code == 404
    assert [r.name for r in AlertRule.objects.all()] == ["Few signups"]


def test_a_rule_shows_its_open_episode(client: Client, manager: SiteKey) -> None:
    rule = AlertRule.objects.create(site=manager.site, name="Lag", kind="realtime_lag", threshold=60)
    Episode.objects.create(rule=rule, opened_at=T0, resolved_at=T0 + dt.timedelta(minutes=5), value=90, peak=95)
    assert manager.get(client, f"alerts/rules/{rule.pk}").json()["open_episode_id"] is None
    now_open = Episode.objects.create(rule=rule, opened_at=T0 + dt.timedelta(hours=1), value=70, peak=70)
    assert manager.get(client, f"alerts/rules/{rule.pk}").json()["open_episode_id"] == str(now_open.pk)
    assert manager.get(client, "alerts/rules").json()["results"][0]["open_episode_id"] == str(now_open.pk)


def test_another_sites_objects_are_not_found(client: Client, manager: SiteKey) -> None:
    """Ids of another site's rule, channel, goal and subscription: 404 in the URL, 400 in a body;
    another site's key on this site's URLs: 404."""
    other = make_site(tz="UTC", scopes=("read", "manage"))
    rule = AlertRule.objects.create(site=other.site, name="Theirs", kind="drift", threshold=5)
    channel = Channel.objects.create(site=other.site, name="Theirs", kind="email", email="them@example.com")
    goal = Goal.objects.create(site=other.site, name="Theirs", kind="page", path="/x")
    sub = ReportSubscription.objects.create(site=other.site, email="them@example.com", frequency="weekly")
    Episode.objects.create(rule=rule, opened_at=T0, value=9, peak=9)
    for method, path, body in (
        ("GET", f"alerts/rules/{rule.pk}", None),
        ("PATCH", f"alerts/rules/{rule.pk}", {"enabled": False}),
        ("DELETE", f"alerts/rules/{rule.pk}", None),
        ("DELETE", f"alerts/channels/{channel.pk}", None),
        ("DELETE", f"reports/subscriptions/{sub.pk}", None),
    ):
        response = send(client, manager, method, path, body)
        assert response.status_code == 404, (method, path, response.content)
        assert set(response.json()) == {"error"}
    refused = send(client, manager, "POST", "alerts/rules", {**SPIKE, "channels": [channel.pk]})
    assert refused.json()["error"]["parameter"] == "channels"
    refused = send(client, manager, "POST", "alerts/rules", {"name": "G", "kind": "goal", "threshold": 1,
                                                             "goal_id": goal.pk})  # fmt: skip
    assert refused.json()["error"]["parameter"] == "goal_id"
    for path in ("alerts/rules", "alerts/channels", "alerts/episodes", "reports/subscriptions"):
        assert manager.get(client, path).json()["results"] == [], path
        # The other site's key on this site's URL: as for a site that does not exist.
        response = client.get(f"/api/v1/sites/{manager.site.site_id}/{path}", HTTP_AUTHORIZATION=f"Bearer {other.key}")
        assert response.status_code == 404, path
    assert send(client, other, "DELETE", f"alerts/rules/{rule.pk}").status_code == 204  # its own key may
    assert (AlertRule.objects.count(), Channel.objects.count(), ReportSubscription.objects.count()) == (0, 1, 1)


def test_a_webhook_secret_is_shown_once(client: Client, manager: SiteKey) -> None:
    hook = webhook(client, manager)
    stored = Channel.objects.get(pk=hook["channel_id"])
    assert hook["secret"] == stored.secret
    assert len(hook["secret"]) >= 32
    assert (hook["kind"], hook["url"], hook["email"], hook["slack"], hook["enabled"]) == (
        "webhook", "https://hooks.example.com/ff", "", False, True)  # fmt: skip
    mail = send(client, manager, "POST", "alerts/channels", {"name": "Mail", "kind": "email",
                                                             "email": "ops@example.com"})  # fmt: skip
    assert mail.status_code == 201
    assert mail.json()["secret"] is None
    # Never listed again, nor anywhere in a rule or episode answer.
    rule = send(client, manager, "POST", "alerts/rules", {**SPIKE, "channels": [int(hook["channel_id"])]}).json()
    answers = [manager.get(client, p) for p in ("alerts/channels", "alerts/rules", f"alerts/rules/{rule['rule_id']}")]
    for answer in answers:
        assert answer.status_code == 200
        assert stored.secret not in answer.content.decode()
    listed = answers[0].json()["results"]
    assert [c["name"] for c in listed] == ["Ops hook", "Mail"]
    assert all("secret" not in c for c in listed)
    # The URL, which may be the credential itself (a Slack incoming webhook), only as its host.
    assert listed[0]["url"] == "https://hooks.example.com/…"
    for answer in answers:
        assert "hooks.example.com/ff" not in answer.content.decode()


@pytest.mark.parametrize(
    ("body", "parameter"),
    [
        ({"kind": "email", "email": "a@example.com"}, "name"),
        ({"name": "x", "kind": "pager"}, "kind"),
        ({"name": "x", "kind": "email"}, "email"),
        ({"name": "x", "kind": "email", "email": "not an address"}, "email"),
        ({"name": "x", "kind": "email", "email": "a@example.com", "url": "https://x.example.com"}, "email"),
        ({"name": "x", "kind": "webhook"}, "url"),
        ({"name": "x", "kind": "webhook", "url": "ftp://files.example.com/x"}, "url"),
        ({"name": "x", "kind": "webhook", "url": "https://x.example.com", "email": "a@example.com"}, "url"),
        ({"name": "x", "kind": "email", "email": "a@example.com", "slack": True}, "slack"),
        ({"name": "x", "kind": "webhook", "url": 5}, "url"),
    ],
)
def test_bad_channels_are_refused_naming_the_field(
    client: Client, manager: SiteKey, body: object, parameter: str
) -> None:
    response = send(client, manager, "POST", "alerts/channels", body)
    assert response.status_code == 400, response.content
    assert response.json()["error"]["parameter"] == parameter, response.content
    assert not Channel.objects.exists()


def test_channel_names_are_unique_per_site_and_deleting_one_unlinks_it(client: Client, manager: SiteKey) -> None:
    hook = webhook(client, manager)
    again = send(client, manager, "POST", "alerts/channels", {"name": "Ops hook", "kind": "email",
                                                              "email": "a@example.com"})  # fmt: skip
    assert again.status_code == 400
    assert again.json()["error"]["parameter"] == "name"
    webhook(client, make_site(tz="UTC", scopes=("read", "manage")))  # the same name on another site is fine
    rule = send(client, manager, "POST", "alerts/rules", {**SPIKE, "channels": [int(hook["channel_id"])]}).json()
    assert send(client, manager, "DELETE", f"alerts/channels/{hook['channel_id']}").status_code == 204
    assert manager.get(client, f"alerts/rules/{rule['rule_id']}").json()["channels"] == []
    assert manager.get(client, "alerts/channels").json()["results"] == []


def _episodes(client: Client, sk: SiteKey, **params: object) -> dict:
    response = sk.get(client, "alerts/episodes", **params)
    assert response.status_code == 200, response.content
    return response.json()


def test_episodes_by_status_range_rule_and_page(client: Client, manager: SiteKey) -> None:
    spike = AlertRule.objects.create(site=manager.site, name="Spike", kind="spike", threshold=3)
    lag = AlertRule.objects.create(site=manager.site, name="Lag", kind="realtime_lag", threshold=60)
    hour = dt.timedelta(hours=1)
    details = {
        "summary": "Visitors 5x the usual",
        "metric": "visitors",
        "value": 250.0,
        "threshold": 3.0,
        "window_minutes": 30,
        "subject": "site",
        "top_referrers": [{"value": "news.example", "visitors": 90}],
        "top_pages": [],
        "series": [{"t": "2026-11-02T12:00:00Z", "v": 12}],
        "dashboard_path": "/dashboard/",
    }
    # Spike: resolved 12:00-13:00 and 15:00-16:00 on day 0, open since 12:00 on day 1; lag: resolved.
    e1 = Episode.objects.create(rule=spike, opened_at=T0, resolved_at=T0 + hour, value=4, peak=5, details=details)
    e2 = Episode.objects.create(rule=spike, opened_at=T0 + 3 * hour, resolved_at=T0 + 4 * hour, value=3.2, peak=3.3,
                                suppressed=True)  # fmt: skip
    e3 = Episode.objects.create(rule=spike, opened_at=T0 + 24 * hour, value=6, peak=8)
    e4 = Episode.objects.create(rule=lag, opened_at=T0 + 2 * hour, resolved_at=T0 + 2.5 * hour, value=61, peak=300)
    other = make_site(tz="UTC")
    theirs = AlertRule.objects.create(site=other.site, name="Spike", kind="spike", threshold=3)
    Episode.objects.create(rule=theirs, opened_at=T0, value=9, peak=9)

    def ids(answer: dict) -> list[int]:
        return [int(e["episode_id"]) for e in answer["results"]]

    everything = _episodes(client, manager)
    assert ids(everything) == [e3.pk, e2.pk, e4.pk, e1.pk]  # newest first
    assert (everything["total"], everything["page"], everything["limit"]) == (4, 1, 10)
    first = everything["results"][-1]
    assert first == {
        "episode_id": str(e1.pk), "rule_id": str(spike.pk), "rule_name": "Spike", "kind": "spike",
        "opened_at": "2026-11-02T12:00:00+00:00", "resolved_at": "2026-11-02T13:00:00+00:00", "value": 4.0,
        "peak": 5.0, "suppressed": False, "details": details,
    }  # fmt: skip
    assert everything["results"][1]["suppressed"] is True
    assert ids(_episodes(client, manager, status="open")) == [e3.pk]
    assert ids(_episodes(client, manager, status="resolved")) == [e2.pk, e4.pk, e1.pk]
    assert ids(_episodes(client, manager, rule=lag.pk)) == [e4.pk]
    # Overlapping the range: 13:30-15:30 meets e4 (14:00-14:30) and e2 (15:00-16:00), not e1 (ended 13:00).
    window = {"from": "2026-11-02T13:30:00Z", "to": "2026-11-02T15:30:00Z"}
    assert ids(_episodes(client, manager, **window)) == [e2.pk, e4.pk]
    assert ids(_episodes(client, manager, **{"from": "2026-11-03"})) == [e3.pk]  # still open
    assert ids(_episodes(client, manager, to="2026-11-02T12:00:00Z")) == []  # the end is exclusive
    # Dates are midnight in tz: 2026-11-03 in Tokyo is 15:00 UTC on the 2nd, so e2 (ended 16:00) overlaps.
    assert ids(_episodes(client, manager, **{"from": "2026-11-03", "tz": "Asia/Tokyo"})) == [e3.pk, e2.pk]
    pages = [_episodes(client, manager, limit=3, page=n) for n in (1, 2, 3)]
    assert [ids(p) for p in pages] == [[e3.pk, e2.pk, e4.pk], [e1.pk], []]
    assert {p["total"] for p in pages} == {4}


@pytest.mark.parametrize(
    ("params", "parameter"),
    [
        ({"status": "closed"}, "status"),
        ({"from": "yesterday"}, "from"),
        ({"to": "2026-13-01"}, "to"),
        ({"from": "2026-11-02", "to": "2026-11-01"}, "to"),
        ({"from": "0001-01-01T00:00:00+05:00"}, "from"),
        ({"to": "1999-12-31"}, "to"),
        ({"tz": "Mars/Olympus"}, "tz"),
        ({"limit": "0"}, "limit"),
        ({"page": "-1"}, "page"),
        ({"rule": "spike"}, "rule"),
    ],
)
def test_bad_episode_queries_are_refused_naming_the_parameter(
    client: Client, manager: SiteKey, params: dict, parameter: str
) -> None:
    response = manager.get(client, "alerts/episodes", **params)
    assert response.status_code == 400, response.content
    assert response.json()["error"]["parameter"] == parameter


def test_subscription_lifecycle(client: Client, manager: SiteKey) -> None:
    created = send(client, manager, "POST", "reports/subscriptions", {"email": "boss@example.com",
                                                                      "frequency": "weekly"})  # fmt: skip
    assert created.status_code == 201, created.content
    sub = created.json()
    assert (sub["email"], sub["frequency"], sub["unsubscribed_at"], sub["last_period"]) == (
        "boss@example.com", "weekly", None, "")  # fmt: skip
    monthly = send(client, manager, "POST", "reports/subscriptions", {"email": "boss@example.com",
                                                                      "frequency": "monthly"})  # fmt: skip
    assert monthly.status_code == 201
    again = send(client, manager, "POST", "reports/subscriptions", {"email": "boss@example.com", "frequency": "weekly"})
    assert again.json()["error"] == {
        "parameter": "email",
        "message": "this recipient already has a weekly subscription for this site",
    }
    # One who unsubscribed through a report's link stays listed, with the time.
    ReportSubscription.objects.filter(pk=monthly.json()["subscription_id"]).update(unsubscribed_at=T0)
    listed = manager.get(client, "reports/subscriptions").json()["results"]
    assert [(s["frequency"], s["unsubscribed_at"]) for s in listed] == [
        ("weekly", None), ("monthly", "2026-11-02T12:00:00+00:00")]  # fmt: skip
    Delivery.objects.create(subscription_id=sub["subscription_id"], event="report", period="2026-W45", status="sent")

    path = f"reports/subscriptions/{sub['subscription_id']}"
    assert send(client, manager, "DELETE", path).status_code == 204
    assert send(client, manager, "DELETE", path).status_code == 404
    assert [s["frequency"] for s in manager.get(client, "reports/subscriptions").json()["results"]] == ["monthly"]
    assert not Delivery.objects.exists()


@pytest.mark.parametrize(
    ("body", "parameter"),
    [
        ({"frequency": "weekly"}, "email"),
        ({"email": "not an address", "frequency": "weekly"}, "email"),
        ({"email": ["a@example.com"], "frequency": "weekly"}, "email"),
        ({"email": "a@example.com"}, "frequency"),
        ({"email": "a@example.com", "frequency": "daily"}, "frequency"),
        ("a@example.com", "body"),
    ],
)
def test_bad_subscriptions_are_refused_naming_the_field(
    client: Client, manager: SiteKey, body: object, parameter: str
) -> None:
    response = send(client, manager, "POST", "reports/subscriptions", body)
    assert response.status_code == 400, response.content
    assert response.json()["error"]["parameter"] == parameter, response.content
    assert not ReportSubscription.objects.exists()
