"""``create_goal`` and ``create_funnel``: what up.sh and operators define goals with."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from footfall.models import Funnel, Goal, Site

pytestmark = pytest.mark.django_db


@pytest.fixture
def site() -> Site:
    return Site.objects.create(site_id="cmd-goals", name="Goals")


def test_goals_and_a_funnel_by_name(site: Site) -> None:
    call_command("create_goal", "cmd-goals", "--name", "Pricing", "--page", "/pricing")
    call_command("create_goal", "cmd-goals", "--name", "Pro", "--event", "signup", "--prop", "plan", "--value", "pro")
    call_command("create_goal", "cmd-goals", "--name", "Pricing", "--page", "/pricing*")  # updates
    call_command("create_funnel", "cmd-goals", "--name", "Buy", "--step", "Pricing", "--step", "Pro")
    call_command("create_funnel", "cmd-goals", "--name", "Buy", "--step", "Pro", "--step", "Pricing")  # kept
    assert [(g.name, g.kind, g.path) for g in Goal.objects.filter(site=site)] == [
        ("Pricing", "page", "/pricing*"), ("Pro", "event", "")]  # fmt: skip
    assert [s.goal.name for s in Funnel.objects.get(site=site).steps.order_by("position")] == ["Pricing", "Pro"]


@pytest.mark.parametrize(
    ("command", "args", "message"),
    [
        ("create_goal", ["--name", "x", "--page", "pricing"], "path"),
        ("create_goal", ["--name", "x", "--event", "bad name"], "event"),
        ("create_funnel", ["--name", "f", "--step", "nope", "--step", "nope2"], "no goal named"),
    ],
)
def test_bad_definitions_are_refused(site: Site, command: str, args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        call_command(command, "cmd-goals", *args)
    assert not Goal.objects.exists()
    assert not Funnel.objects.exists()


def test_an_unknown_site_is_named() -> None:
    with pytest.raises(CommandError, match="no site 'nowhere'"):
        call_command("create_goal", "nowhere", "--name", "x", "--page", "/")
