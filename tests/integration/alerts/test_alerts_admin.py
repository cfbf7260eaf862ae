"""The admin of alerts and reports, as a superuser sees it: every page renders, the delivery
log and the episodes filter, the log cannot be edited, a webhook's secret rotates."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from alerts.models import AlertRule, Channel, Delivery, Episode, ReportSubscription
from footfall.models import Site

pytestmark = pytest.mark.django_db
T0 = dt.datetime(2026, 11, 2, 12, 0, tzinfo=dt.UTC)
ADMIN = "/admin/footfall_alerts"


@pytest.fixture
def admin_client(db: None) -> Client:
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", password="not-used-here-0"))
    return client


@pytest.fixture
def log(db: None) -> dict[str, object]:
    """Two sites; a rule with a webhook and an email channel, a resolved and an open episode, a
    report subscription, and deliveries: sent, failed (after three attempts, a 500) and pending."""
    site = Site.objects.create(site_id="alerts-admin", name="Admin test", domains=["a.example.com"], timezone="UTC")
    other = Site.objects.create(site_id="alerts-other", name="Other", domains=["b.example.com"], timezone="UTC")
    hook = Channel.objects.create(site=site, name="Ops hook", kind="webhook", url="https://hooks.example.com/ff")
    mail = Channel.objects.create(site=site, name="Ops mail", kind="email", email="ops@example.com")
    rule = AlertRule.objects.create(site=site, name="Pricing spike", kind="spike", threshold=3)
    rule.channels.set([hook, mail])
    lag = AlertRule.objects.create(site=other, name="Lagging", kind="realtime_lag", threshold=60)
    resolved = Episode.objects.create(rule=rule, opened_at=T0, resolved_at=T0 + dt.timedelta(hours=1), value=4,
                                      peak=5, details={"summary": "Visitors 5x the usual"})  # fmt: skip
    open_ = Episode.objects.create(rule=lag, opened_at=T0 + dt.timedelta(hours=2), value=75, peak=90)
    sub = ReportSubscription.objects.create(site=site, email="boss@example.com", frequency="weekly")
    sent = Delivery.objects.create(channel=mail, episode=resolved, event="opened", status="sent", attempts=1,
                                   sent_at=T0)  # fmt: skip
    failed = Delivery.objects.create(channel=hook, episode=resolved, event="opened", status="failed", attempts=3,
                                     response_status=500, last_error="HTTP 500 from the receiver: boom")  # fmt: skip
    pending = Delivery.objects.create(subscription=sub, event="report", period="2026-W45")
    return {"site": site, "other": other, "hook": hook, "mail": mail, "rule": rule, "resolved": resolved,
            "open": open_, "sub": sub, "sent": sent, "failed": failed, "pending": pending}  # fmt: skip


def page(client: Client, path: str, **params: object) -> str:
    response = client.get(f"{ADMIN}/{path}", params)
    assert response.status_code == 200, (path, params, response.status_code)
    return response.content.decode()


def listed_ids(client: Client, model: str, **params: object) -> set[int]:
    """The primary keys on a change list page (its selection checkboxes)."""
    response = client.get(f"{ADMIN}/{model}/", params)
    assert response.status_code == 200, (model, params)  # an unknown filter redirects (302) to ?e=1
    return {int(obj.pk) for obj in response.context["cl"].result_list}


def test_every_page_renders_for_a_superuser(admin_client: Client, log: dict) -> None:
    index = page(admin_client, "")
    for name in ("Alert rules", "Channels", "Episodes", "Report subscriptions", "Deliveries"):
        assert name in index, name
    for model, obj in (("alertrule", log["rule"]), ("channel", log["hook"]), ("episode", log["resolved"]),
                       ("reportsubscription", log["sub"]), ("delivery", log["failed"])):  # fmt: skip
        page(admin_client, f"{model}/")
        page(admin_client, f"{model}/{obj.pk}/change/")
    for model in ("alertrule", "channel", "reportsubscription"):
        page(admin_client, f"{model}/add/")
    rule_page = page(admin_client, f"alertrule/{log['rule'].pk}/change/")
    assert "z-score" in rule_page  # what the threshold means, per kind
    assert "Visitors 5x the usual" in page(admin_client, f"episode/{log['resolved'].pk}/change/")


def test_the_webhook_secret_is_shown_and_rotates(admin_client: Client, log: dict) -> None:
    hook, mail = log["hook"], log["mail"]
    old_hook, old_mail = hook.secret, mail.secret
    assert old_hook in page(admin_client, f"channel/{hook.pk}/change/")
    response = admin_client.post(
        f"{ADMIN}/channel/", {"action": "rotate_secret", "_selected_action": [hook.pk, mail.pk]}, follow=True
    )
    assert response.status_code == 200
    assert "New secret for 1 webhook(s)" in response.content.decode()
    hook.refresh_from_db()
    mail.refresh_from_db()
    assert hook.secret != old_hook
    assert len(hook.secret) >= 32
    assert mail.secret == old_mail  # an email channel signs nothing
    assert hook.secret in page(admin_client, f"channel/{hook.pk}/change/")


def test_the_delivery_log_filters_and_is_read_only(admin_client: Client, log: dict) -> None:
    sent, failed, pending = log["sent"].pk, log["failed"].pk, log["pending"].pk
    assert listed_ids(admin_client, "delivery") == {sent, failed, pending}
    assert listed_ids(admin_client, "delivery", status="failed") == {failed}
    assert listed_ids(admin_client, "delivery", status="pending") == {pending}
    assert listed_ids(admin_client, "delivery", channel__id__exact=log["mail"].pk) == {sent}
    assert listed_ids(admin_client, "delivery", channel__kind="webhook") == {failed}
    assert listed_ids(admin_client, "delivery", event="report") == {pending}
    failed_page = page(admin_client, "delivery/", status="failed")
    assert "HTTP 500 from the receiver: boom" in failed_page  # the last error, in the list
    detail = page(admin_client, f"delivery/{failed}/change/")
    assert 'name="_save"' not in detail  # shown, not editable
    assert admin_client.get(f"{ADMIN}/delivery/add/").status_code == 403
    response = admin_client.post(f"{ADMIN}/delivery/{failed}/change/", {"status": "sent"})
    assert response.status_code == 403
    assert Delivery.objects.get(pk=failed).status == "failed"
    assert admin_client.post(f"{ADMIN}/delivery/{failed}/delete/", {"post": "yes"}).status_code == 403
    assert Delivery.objects.filter(pk=failed).exists()


def test_episodes_filter_by_status_and_site_and_are_read_only(admin_client: Client, log: dict) -> None:
    resolved, open_ = log["resolved"].pk, log["open"].pk
    assert listed_ids(admin_client, "episode") == {resolved, open_}
    assert listed_ids(admin_client, "episode", status="open") == {open_}
    assert listed_ids(admin_client, "episode", status="resolved") == {resolved}
    assert listed_ids(admin_client, "episode", rule__site__site_id__exact="alerts-other") == {open_}
    assert 'name="_save"' not in page(admin_client, f"episode/{open_}/change/")
    assert admin_client.get(f"{ADMIN}/episode/add/").status_code == 403


def test_subscriptions_filter_by_subscribed(admin_client: Client, log: dict) -> None:
    gone = ReportSubscription.objects.create(site=log["site"], email="former@example.com", frequency="monthly",
                                             unsubscribed_at=T0)  # fmt: skip
    assert listed_ids(admin_client, "reportsubscription", subscribed="no") == {gone.pk}
    assert listed_ids(admin_client, "reportsubscription", subscribed="yes") == {log["sub"].pk}


def test_a_rule_takes_only_its_sites_channels(admin_client: Client, log: dict) -> None:
    theirs = Channel.objects.create(site=log["other"], name="Their mail", kind="email", email="them@example.com")
    form = {"site": log["site"].pk, "name": "Drop", "kind": "drop", "threshold": "0.5", "window_minutes": "60",
            "scope": "", "value": "", "max_per_day": "3", "enabled": "on", "created_at_0": "2026-11-02",
            "created_at_1": "12:00:00"}  # fmt: skip
    refused = admin_client.post(f"{ADMIN}/alertrule/add/", {**form, "channels": [log["mail"].pk, theirs.pk]})
    assert refused.status_code == 200  # the form again, with the error
    assert "not channels of this site: Their mail" in refused.content.decode()
    assert not AlertRule.objects.filter(name="Drop").exists()
    # The model's own rules apply too: a drop's threshold is a share.
    refused = admin_client.post(f"{ADMIN}/alertrule/add/", {**form, "threshold": "2"})
    assert "a share between 0 and 1" in refused.content.decode()
    accepted = admin_client.post(f"{ADMIN}/alertrule/add/", {**form, "channels": [log["mail"].pk]})
    assert accepted.status_code == 302, accepted.content.decode()[:2000]
    assert [c.name for c in AlertRule.objects.get(name="Drop").channels.all()] == ["Ops mail"]
