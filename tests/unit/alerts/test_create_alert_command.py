"""``create_alert``: what up.sh and operators define alert rules, channels and reports with."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from alerts.models import AlertRule, Channel, ReportSubscription
from footfall.models import Goal, Site

pytestmark = pytest.mark.django_db


@pytest.fixture
def site() -> Site:
    site = Site.objects.create(site_id="cmd-alerts", name="Alerts")
    Goal.objects.create(site=site, name="Pricing", kind="page", path="/pricing")
    return site


def test_rules_channels_and_reports_by_name_idempotently(site: Site) -> None:
    for threshold in ("3", "4"):  # the second run updates the rule, reuses the channel and subscription
        call_command("create_alert", "cmd-alerts", "--name", "Spikes", "--kind", "spike", "--threshold", threshold,
                     "--window", "15", "--email", "ops@example.com", "--report", "weekly")  # fmt: skip
    call_command("create_alert", "cmd-alerts", "--name", "Few pricing views", "--kind", "goal", "--threshold", "1",
                 "--goal", "Pricing", "--email", "ops@example.com", "--email", "ceo@example.com")  # fmt: skip
    spikes = AlertRule.objects.get(site=site, name="Spikes")
    assert (spikes.kind, spikes.threshold, spikes.window_minutes) == ("spike", 4.0, 15)
    assert [c.email for c in spikes.channels.all()] == ["ops@example.com"]
    goal_rule = AlertRule.objects.get(site=site, name="Few pricing views")
    assert goal_rule.goal is not None
    assert goal_rule.goal.name == "Pricing"
    assert sorted(c.email for c in goal_rule.channels.all()) == ["ceo@example.com", "ops@example.com"]
    assert Channel.objects.filter(site=site).count() == 2
    assert list(ReportSubscription.objects.values_list("email", "frequency")) == [("ops@example.com", "weekly")]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--kind", "drop", "--threshold", "1.5"], "threshold"),
        (["--kind", "goal", "--threshold", "1"], "goal"),
        (["--kind", "goal", "--threshold", "1", "--goal", "Nope"], "no goal 'Nope'"),
        (["--kind", "spike", "--threshold", "3", "--window", "2"], "window_minutes"),
        (["--kind", "rollup", "--threshold", "6", "--scope", "page"], "scope"),
        (["--kind", "spike", "--threshold", "3", "--email", "not-an-address"], "email"),
    ],
)
def test_bad_definitions_are_refused_and_nothing_is_stored(site: Site, args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        call_command("create_alert", "cmd-alerts", "--name", "Bad", *args)
    assert not AlertRule.objects.exists()
    assert not Channel.objects.exists()


def test_an_unknown_site_is_named() -> None:
    with pytest.raises(CommandError, match="no site 'nowhere'"):
        call_command("create_alert", "nowhere", "--name", "x", "--kind", "spike", "--threshold", "3")
