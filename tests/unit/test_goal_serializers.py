"""Goal and funnel request bodies (api.goal_serializers): the API's answers to them, field at fault
and message, as the views gave them before the serializers, and their OpenAPI description."""

from __future__ import annotations

from typing import Any

import pytest
from drf_spectacular.generators import SchemaGenerator

from api.errors import validated
from api.goal_serializers import FunnelInputSerializer, GoalInputSerializer
from footfall.models import MAX_FUNNELS_PER_SITE, MAX_GOALS_PER_SITE, Funnel, Goal, Site
from footfall.vocabulary import QueryError

pytestmark = pytest.mark.django_db

NOT_A_PATH = "must start with / or * and be at most 512 characters"
NOT_AN_EVENT = "must be an event name the tracker sends (letters, digits, _.:-)"
NOT_IDS = "must be a list of goal ids (integers)"
TOO_LONG_NAME = "Ensure this value has at most 100 characters (it has 101)."
PAGE_ONLY = "a page goal has a path, no event or property"
EVENT_ONLY = "an event goal has an event name, no path"
NO_PROP = "is required when a property value is given"


@pytest.fixture
def site() -> Site:
    return Site.objects.create(site_id="serializers-test", name="Serializers", timezone="UTC")


def refusal(serializer: type, site: Site, body: object) -> tuple[str, str]:
    with pytest.raises(QueryError) as err:
        validated(serializer, body, context={"site": site})
    return err.value.parameter, str(err.value).removeprefix(f"{err.value.parameter}: ")


def goal_ids(site: Site, n: int = 2) -> list[int]:
    return [Goal.objects.create(site=site, name=f"g{i}", kind="page", path=f"/g{i}").pk for i in range(n)]


@pytest.mark.parametrize(
    ("body", "answer"),
    [
        ({"kind": "page", "path": "/x"}, ("name", "is required")),
        ({"name": None, "kind": "page", "path": "/x"}, ("name", "is required")),
        ({"name": "  ", "kind": "page", "path": "/x"}, ("name", "is required")),
        ({"name": 3, "kind": "page", "path": "/x"}, ("name", "must be a string")),
        ({"name": True, "kind": 1}, ("name", "must be a string")),  # fields in order: name first
        ({"name": "x", "kind": 1}, ("kind", "must be a string")),
        ({"name": "x", "kind": " "}, ("kind", "is required")),
        ({"name": "x", "kind": "sometimes"},
         ("kind", "Value 'sometimes' is not a valid choice.; must be 'page' or 'event'")),
        # Lengths are the model's, after every type check: its message, and joined with the definition's.
        ({"name": "n" * 101, "kind": "page", "path": "x"}, ("name", TOO_LONG_NAME)),
        ({"name": "x", "kind": "page", "path": "/" + "a" * 512},
         ("path", f"Ensure this value has at most 512 characters (it has 513).; {NOT_A_PATH}")),
        ({"name": "x" * 101, "kind": "page", "path": 5}, ("path", "must be a string")),
        ({"name": "x", "kind": "page"}, ("path", NOT_A_PATH)),
        ({"name": "x", "kind": "page", "path": "x"}, ("path", NOT_A_PATH)),
        ({"name": "x", "kind": "page", "path": "/x", "value": "v"}, ("event", PAGE_ONLY)),
        ({"name": "x", "kind": "event", "event": "has space"}, ("event", NOT_AN_EVENT)),
        ({"name": "x", "kind": "event", "event": "buy", "value": "3"}, ("prop", NO_PROP)),
        ({"name": "x", "kind": "event", "event": "buy", "path": "/x"}, ("path", EVENT_ONLY)),
        ({"name": "x", "kind": "event", "event": "buy", "prop": "p", "value": 3}, ("value", "must be a string")),
        (["not", "an", "object"], ("body", "must be a JSON object")),
        (None, ("body", "must be a JSON object")),
        ("text", ("body", "must be a JSON object")),
    ],
)  # fmt: skip
def test_bad_goals_are_refused_naming_the_field(site: Site, body: object, answer: tuple[str, str]) -> None:
    assert refusal(GoalInputSerializer, site, body) == answer


def test_goal_text_is_stripped_and_null_is_empty(site: Site) -> None:
    body = {"name": " Pro ", "kind": " event ", "event": "signup", "prop": "plan", "value": "pro", "path": None,
            "junk": [1]}  # fmt: skip
    fields = validated(GoalInputSerializer, body, context={"site": site})
    none = {"revenue_prop": "", "currency_prop": "", "currency": ""}
    text = {"name": "Pro", "kind": "event", "path": "", "event": "signup", "prop": "plan", "value": "pro"}
    assert fields == text | none
    assert validated(GoalInputSerializer, {"name": "P", "kind": "page", "path": "/p*"}, context={"site": site}) == {
        "name": "P", "kind": "page", "path": "/p*", "event": "", "prop": "", "value": ""
    } | none  # fmt: skip
    paid = {"name": "Paid", "kind": "event", "event": "purchase", "revenue_prop": "amount", "currency": " EUR "}
    assert validated(GoalInputSerializer, paid, context={"site": site})["currency"] == "EUR"
    assert refusal(GoalInputSerializer, site, paid | {"currency": "euro"})[0] == "currency"


def test_goal_names_and_cap_are_the_sites(site: Site) -> None:
    Goal.objects.create(site=site, name="Pricing", kind="page", path="/pricing")
    taken = {"name": " Pricing ", "kind": "page", "path": "/p"}
    assert refusal(GoalInputSerializer, site, taken) == ("body", "Goal with this Site and Name already exists.")
    other = Site.objects.create(site_id="serializers-other", name="Other", timezone="UTC")
    assert validated(GoalInputSerializer, taken, context={"site": other})["name"] == "Pricing"

    Goal.objects.bulk_create(
        Goal(site=site, name=f"g{i}", kind="page", path=f"/g{i}") for i in range(MAX_GOALS_PER_SITE - 1)
    )
    new = {"name": "New", "kind": "page", "path": "/new"}
    assert refusal(GoalInputSerializer, site, new) == ("body", f"a site has at most {MAX_GOALS_PER_SITE} goals")
    assert refusal(GoalInputSerializer, site, {**new, "path": "new"}) == ("path", NOT_A_PATH)


def test_bad_funnels_are_refused_naming_the_field(site: Site) -> None:
    a, b = goal_ids(site)
    other = Site.objects.create(site_id="serializers-other", name="Other", timezone="UTC")
    theirs = Goal.objects.create(site=other, name="T", kind="page", path="/t").pk
    cases: list[tuple[Any, tuple[str, str]]] = [
        ({"name": "F"}, ("steps", NOT_IDS)),
        ({"name": "F", "steps": [str(a), b]}, ("steps", NOT_IDS)),
        ({"name": "F", "steps": [True, b]}, ("steps", NOT_IDS)),
        ({"name": "F", "steps": [float(a), b]}, ("steps", NOT_IDS)),
        ({"name": "F", "steps": [a]}, ("steps", "a funnel has 2 to 8 steps")),
        ({"name": "F", "steps": [a, b] * 4 + [a]}, ("steps", "a funnel has 2 to 8 steps")),
        ({"name": "F", "steps": [a, theirs]}, ("steps", f"not goals of site serializers-test: [{theirs}]")),
        ({"name": "F", "steps": [a, 2**70, -1]}, ("steps", f"not goals of site serializers-test: [{2**70}, -1]")),
        ({"name": "F", "steps": [a, b], "window_minutes": "60"}, ("window_minutes", "must be an integer")),
        ({"name": "F", "steps": [a, b], "window_minutes": None}, ("window_minutes", "must be an integer")),
        ({"name": "F", "steps": [a, b], "window_minutes": 1441}, ("window_minutes", "must be 0 (one session) to 1440")),
        ({"name": "F", "steps": [a, b], "strict": 1}, ("strict", "must be true or false")),
        ({"name": "F", "steps": [a, b], "strict": None}, ("strict", "must be true or false")),
        ({"name": " ", "steps": [a, b]}, ("name", "is required")),
        ({"name": 5, "steps": [a, b]}, ("name", "must be a string")),
        ({"name": "n" * 101, "steps": [a, b]}, ("name", TOO_LONG_NAME)),
        # Checked in the order steps, window_minutes, strict, name; the definition after the types.
        ({"name": 5, "steps": "x", "window_minutes": "x", "strict": "x"}, ("steps", NOT_IDS)),
        ({"name": 5, "steps": [a], "window_minutes": "x", "strict": "x"}, ("window_minutes", "must be an integer")),
        ({"name": 5, "steps": [a], "strict": "x"}, ("strict", "must be true or false")),
        ({"name": "n" * 101, "steps": [a]}, ("steps", "a funnel has 2 to 8 steps")),
        ([a, b], ("body", "must be a JSON object")),
        (None, ("body", "must be a JSON object")),
    ]
    for body, answer in cases:
        assert refusal(FunnelInputSerializer, site, body) == answer, body


def test_funnel_defaults_and_the_models_answers_first(site: Site) -> None:
    a, b = goal_ids(site)
    fields = validated(FunnelInputSerializer, {"name": " Buy ", "steps": [a, b], "junk": 1}, context={"site": site})
    assert fields == {"steps": [a, b], "window_minutes": 0, "strict": False, "name": "Buy"}
    Funnel.create(site, "Buy", [a, b])
    assert refusal(FunnelInputSerializer, site, {"name": "Buy", "steps": [b, a]}) == (
        "body", "Funnel with this Site and Name already exists."
    )  # fmt: skip

    # A site at its cap: refused after unknown goals, before the definition and the name.
    Funnel.objects.bulk_create(Funnel(site=site, name=f"f{i}") for i in range(MAX_FUNNELS_PER_SITE - 1))
    full = ("body", f"a site has at most {MAX_FUNNELS_PER_SITE} funnels")
    assert refusal(FunnelInputSerializer, site, {"name": "n" * 101, "steps": [a], "window_minutes": -1}) == full
    assert refusal(FunnelInputSerializer, site, {"name": "Cap", "steps": [a, 0]}) == (
        "steps", "not goals of site serializers-test: [0]"
    )  # fmt: skip


def test_the_schema_describes_the_bodies_and_their_bounds() -> None:
    schemas = SchemaGenerator().get_schema(request=None, public=True)["components"]["schemas"]
    goal, funnel = schemas["GoalInputRequest"], schemas["FunnelInputRequest"]
    assert sorted(goal["required"]) == ["kind", "name"]
    assert goal["properties"]["name"] == {"type": "string", "minLength": 1, "maxLength": 100}
    assert goal["properties"]["kind"] == {"$ref": "#/components/schemas/GoalKindEnum"}
    assert schemas["GoalKindEnum"]["enum"] == ["page", "event"]
    assert {f: goal["properties"][f]["maxLength"] for f in ("path", "event", "prop", "value")} == {
        "path": 512, "event": 64, "prop": 64, "value": 512
    }  # fmt: skip
    assert sorted(funnel["required"]) == ["name", "steps"]
    steps = {"type": "array", "items": {"type": "integer"}, "maxItems": 8, "minItems": 2}
    assert funnel["properties"]["steps"] == steps
    assert funnel["properties"]["window_minutes"] == {"type": "integer", "maximum": 1440, "minimum": 0, "default": 0}
    assert funnel["properties"]["strict"] == {"type": "boolean", "default": False}
    assert funnel["properties"]["name"] == {"type": "string", "minLength": 1, "maxLength": 100}
