"""Goal and funnel definitions: matching is the same in every layer, bad input is refused."""

from __future__ import annotations

import random
import re
from fnmatch import fnmatchcase

import pytest
from django.core.exceptions import ValidationError

from footfall.goals import DefinitionError, FunnelSpec, GoalSpec, path_regex, prop_text
from footfall.models import Funnel, Goal, Site


@pytest.mark.parametrize(
    ("pattern", "path", "hit"),
    [
        ("/pricing", "/pricing", True),
        ("/pricing", "/pricing/", False),
        ("/blog/*", "/blog/", True),
        ("/blog/*", "/blog/a/b", True),
        ("/blog/*", "/blogs", False),
        ("*/thanks", "/shop/order/thanks", True),
        ("/a.b", "/aXb", False),  # the dot is literal
        ("/(x)+[y]", "/(x)+[y]", True),
        ("/*/edit", "/doc/1/edit", True),
    ],
)
def test_page_patterns(pattern: str, path: str, hit: bool) -> None:
    goal = GoalSpec("1", "page", path=pattern)
    assert goal.matches("pageview", path, None) is hit
    assert goal.matches("signup", path, None) is False  # only page views reach page goals


def test_patterns_match_as_globs() -> None:
    # The atomic-group form must answer as a plain glob match on every input.
    rng = random.Random(7)
    for _ in range(3000):
        pattern = "/" + "".join(rng.choice("ab*/") for _ in range(rng.randrange(0, 7)))
        path = "/" + "".join(rng.choice("ab/\n") for _ in range(rng.randrange(0, 9)))
        goal = GoalSpec("1", "page", path=pattern)
        assert goal.matches("pageview", path, None) is fnmatchcase(path, pattern), (pattern, path)


def test_patterns_read_alike_in_java_syntax() -> None:
    # Spark's rlike is Java's regex: re.escape only ever puts a backslash before punctuation,
    # which Java reads as that character too; letters and digits are never escaped.
    regex = path_regex("/a-b_c~d/*.html?x=1&y")
    assert not re.search(r"\\[A-Za-z0-9]", regex)


@pytest.mark.parametrize(
    ("props", "hit"),
    [({"plan": "pro"}, True), ({"plan": "free"}, False), ({}, False), (None, False), ({"plan": None}, False)],
)
def test_event_goal_with_property(props: dict | None, hit: bool) -> None:
    goal = GoalSpec("2", "event", event="signup", prop="plan", value="pro")
    assert goal.matches("signup", "/x", props) is hit
    assert goal.matches("login", "/x", {"plan": "pro"}) is False


def test_property_values_compare_as_text() -> None:
    assert [prop_text(v) for v in (True, False, 3, 2.5, None, "x")] == ["true", "false", "3", "2.5", "", "x"]
    assert GoalSpec("3", "event", event="buy", prop="qty", value="3").matches("buy", None, {"qty": 3})


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"kind": "page", "path": "pricing"}, "path"),
        ({"kind": "page", "path": "/" + "x" * 600}, "path"),
        ({"kind": "event", "event": "bad name"}, "event"),
        ({"kind": "event", "event": "buy", "value": "3"}, "prop"),
        ({"kind": "other"}, "kind"),
    ],
)
def test_invalid_goals_name_the_field(fields: dict, field: str) -> None:
    with pytest.raises(DefinitionError) as err:
        GoalSpec("1", **fields)
    assert err.value.field == field


def test_funnel_bounds_and_json_round_trip() -> None:
    a, b = GoalSpec("1", "page", path="/"), GoalSpec("2", "event", event="signup")
    with pytest.raises(DefinitionError, match="steps"):
        FunnelSpec("f", (a,))
    with pytest.raises(DefinitionError, match="steps"):
        FunnelSpec("f", (a,) * 9)
    with pytest.raises(DefinitionError, match="window_minutes"):
        FunnelSpec("f", (a, b), window_minutes=-1)
    funnel = FunnelSpec("f", (a, b), "signup", 60, True)
    assert FunnelSpec.from_json(funnel.to_json()) == funnel


@pytest.mark.django_db
class TestModels:
    @pytest.fixture
    def site(self) -> Site:
        return Site.objects.create(site_id="goals-test", name="Goals")

    def test_goal_validation_names_the_field(self, site: Site) -> None:
        with pytest.raises(ValidationError) as err:
            Goal(site=site, name="bad", kind="page", path="no-slash").full_clean()
        assert "path" in err.value.message_dict
        with pytest.raises(ValidationError) as err:
            Goal(site=site, name="mixed", kind="event", event="buy", path="/x").full_clean()
        assert "path" in err.value.message_dict

    def test_funnel_create_and_specs(self, site: Site) -> None:
        pricing = Goal.objects.create(site=site, name="Pricing", kind="page", path="/pricing")
        signup = Goal.objects.create(site=site, name="Signup", kind="event", event="signup", prop="plan", value="pro")
        funnel = Funnel.create(site, "Sign-up", [pricing.pk, signup.pk], window_minutes=30)
        spec = Funnel.specs_by_site(["goals-test"])["goals-test"][0]
        assert spec == funnel.spec()
        assert [s.goal_id for s in spec.steps] == [str(pricing.pk), str(signup.pk)]
        assert Goal.specs_by_site()["goals-test"] == [pricing.spec(), signup.spec()]

    def test_funnel_create_refuses_bad_steps_and_saves_nothing(self, site: Site) -> None:
        other = Site.objects.create(site_id="goals-other", name="Other")
        mine = Goal.objects.create(site=site, name="A", kind="page", path="/a")
        theirs = Goal.objects.create(site=other, name="B", kind="page", path="/b")
        with pytest.raises(ValidationError, match="not goals of site"):
            Funnel.create(site, "x", [mine.pk, theirs.pk])
        with pytest.raises(ValidationError, match="steps"):
            Funnel.create(site, "x", [mine.pk])
        assert not Funnel.objects.exists()

    def test_a_goal_in_a_funnel_cannot_be_deleted(self, site: Site) -> None:
        from django.db.models import ProtectedError

        a = Goal.objects.create(site=site, name="A", kind="page", path="/a")
        b = Goal.objects.create(site=site, name="B", kind="page", path="/b")
        Funnel.create(site, "ab", [a.pk, b.pk])
        with pytest.raises(ProtectedError):
            a.delete()
