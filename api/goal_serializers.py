"""Request bodies of the goal and funnel endpoints (:mod:`api.goal_views`), validated by these serializers.

Their fields check the JSON types only, with the API's messages ("must be a string", "is required",
...). What makes a definition valid is decided where it always was: :mod:`footfall.goals`
(:class:`~footfall.goals.GoalSpec`, :class:`~footfall.goals.FunnelSpec`, whose
:class:`~footfall.goals.DefinitionError` names the field at fault) and the models that store them
(lengths, one name per site, a site's caps). ``validate()`` calls into both, so the rules, their
messages and which one answers first stay the same for the API, the admin and the commands; only
:meth:`Funnel.create`'s own checks (the steps are goals of the site, the site's cap) are repeated
here, in its words, as they come before the definition's. The lengths, choices and bounds declared
on the fields only describe those rules in the OpenAPI schema.

Both serializers need ``context={"site": site}``: the site the definition is for.
"""

from __future__ import annotations

import abc
from typing import Any

from django.core.exceptions import NON_FIELD_ERRORS
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import models
from rest_framework import serializers
from rest_framework.fields import empty
from rest_framework.settings import api_settings

from footfall.goals import (
    EVENT,
    MAX_FUNNEL_STEPS,
    MAX_FUNNEL_WINDOW_MINUTES,
    MIN_FUNNEL_STEPS,
    PAGE,
    DefinitionError,
    FunnelSpec,
)
from footfall.models import MAX_FUNNELS_PER_SITE, Funnel, Goal

MAX_GOAL_ID = 2**63 - 1  # the largest primary key a database's BIGINT holds


def model_refusal(err: DjangoValidationError) -> tuple[str, str]:
    """The field a model's validation refused first ("body" for the object as a whole) and its
    messages, joined: the API's answer to it."""
    if hasattr(err, "error_dict"):
        field, errors = next(iter(err.error_dict.items()))
        return ("body" if field == NON_FIELD_ERRORS else field), "; ".join(e.messages[0] for e in errors)
    return "body", "; ".join(err.messages)


def _refused(field: str, message: str) -> serializers.ValidationError:
    return serializers.ValidationError({field: [message]})


def _full_clean(obj: models.Model) -> None:
    try:
        obj.full_clean()
    except DjangoValidationError as err:
        raise _refused(*model_refusal(err)) from None


def _max_length(model: type[models.Model], field: str) -> int | None:
    return model._meta.get_field(field).max_length


class _TypeOnly(serializers.Field, metaclass=abc.ABCMeta):
    """Mixin of the fields below: ``check(data)`` gives the value of a field that was sent (not
    null), ``absent()`` the value of one left out or null; no DRF validator runs (see the module)."""

    def run_validation(self, data: Any = empty) -> Any:
        return self.absent() if data is empty or data is None else self.check(data)

    def absent(self) -> Any:
        if self.required:
            self.fail("required")
        return self.default

    @abc.abstractmethod
    def check(self, data: Any) -> Any:
        """The value of ``data`` as sent; fails (``self.fail("invalid")``) when it is of the wrong type."""


class _TextMixin(_TypeOnly):
    """A JSON string, without its surrounding blanks; a blank one is as one left out."""

    default_error_messages = {"required": "is required", "invalid": "must be a string"}

    def check(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return data.strip() or self.absent()


class DefinitionText(_TextMixin, serializers.CharField):
    pass


class DefinitionChoice(_TextMixin, serializers.ChoiceField):
    """Text whose valid values are ``choices`` (for the schema): the definition refuses others."""


class GoalIds(_TypeOnly, serializers.ListField):
    default_error_messages = {
        "required": "must be a list of goal ids (integers)",
        "invalid": "must be a list of goal ids (integers)",
    }

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(child=serializers.IntegerField(), **kwargs)

    def check(self, data: Any) -> list[int]:
        if not isinstance(data, list) or not all(isinstance(g, int) and not isinstance(g, bool) for g in data):
            self.fail("invalid")
        return data


class WholeNumber(_TypeOnly, serializers.IntegerField):
    default_error_messages = {"invalid": "must be an integer"}

    def run_validation(self, data: Any = empty) -> Any:
        return self.absent() if data is empty else self.check(data)  # null is no integer

    def check(self, data: Any) -> int:
        if not isinstance(data, int) or isinstance(data, bool):
            self.fail("invalid")
        return data


class TrueOrFalse(_TypeOnly, serializers.BooleanField):
    default_error_messages = {"invalid": "must be true or false"}

    def run_validation(self, data: Any = empty) -> Any:
        return self.absent() if data is empty else self.check(data)  # null is neither

    def check(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class _ObjectBody(serializers.Serializer):
    """A body that is a JSON object (or form): any other is refused as ``body``."""

    default_error_messages = {"invalid": "must be a JSON object"}

    def validate_empty_values(self, data: Any) -> tuple[bool, Any]:
        if data is None:  # JSON null: DRF would answer "No data provided"
            raise serializers.ValidationError({api_settings.NON_FIELD_ERRORS_KEY: [self.error_messages["invalid"]]})
        return super().validate_empty_values(data)


class GoalInputSerializer(_ObjectBody):
    """A goal to create. Text is taken without its surrounding blanks; null stands for ""."""

    # validate(): the model's full_clean, as for a goal made in the admin: its clean() builds the
    # GoalSpec (footfall.goals), then the lengths, the site's cap and one name per site.

    name = DefinitionText(max_length=_max_length(Goal, "name"))
    kind = DefinitionChoice(choices=[PAGE, EVENT])
    path = DefinitionText(
        required=False, allow_blank=True, allow_null=True, default="", max_length=_max_length(Goal, "path"),
        help_text="page goals: a pattern, * wildcards",
    )  # fmt: skip
    event = DefinitionText(
        required=False, allow_blank=True, allow_null=True, default="", max_length=_max_length(Goal, "event"),
        help_text="event goals: the event name",
    )  # fmt: skip
    prop = DefinitionText(
        required=False, allow_blank=True, allow_null=True, default="", max_length=_max_length(Goal, "prop"),
        help_text="event goals, optional: a property",
    )  # fmt: skip
    value = DefinitionText(
        required=False, allow_blank=True, allow_null=True, default="", max_length=_max_length(Goal, "value"),
        help_text="the property's value, as text",
    )  # fmt: skip
    revenue_prop = DefinitionText(
        required=False, allow_blank=True, allow_null=True, default="", max_length=_max_length(Goal, "revenue_prop"),
        help_text="event goals, optional: the property holding the amount (revenue)",
    )  # fmt: skip
    currency_prop = DefinitionText(
        required=False, allow_blank=True, allow_null=True, default="", max_length=_max_length(Goal, "currency_prop"),
        help_text="with revenue: the property holding the currency code",
    )  # fmt: skip
    currency = DefinitionText(
        required=False, allow_blank=True, allow_null=True, default="", max_length=_max_length(Goal, "currency"),
        help_text="with revenue, instead of currency_prop: one fixed ISO 4217 code",
    )  # fmt: skip

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        _full_clean(Goal(site=self.context["site"], **attrs))
        return attrs


class FunnelInputSerializer(_ObjectBody):
    """A funnel to create: its steps are goals of the site, in order."""

    # Declared in the order they are checked: the first refused field answers. validate() resolves
    # the steps to the site's goals and checks the site's cap (as Funnel.create does), builds the
    # FunnelSpec (footfall.goals), then the model checks the name (length, one per site).

    steps = GoalIds(min_length=MIN_FUNNEL_STEPS, max_length=MAX_FUNNEL_STEPS)
    window_minutes = WholeNumber(required=False, default=0, min_value=0, max_value=MAX_FUNNEL_WINDOW_MINUTES)
    strict = TrueOrFalse(required=False, default=False)
    name = DefinitionText(max_length=_max_length(Funnel, "name"))

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        site = self.context["site"]
        steps = attrs["steps"]
        # An id past the database's integers is no goal's: left out of the query, which it would break.
        ids = [g for g in steps if 0 < g <= MAX_GOAL_ID]
        goals = {g.pk: g for g in Goal.objects.filter(site=site, pk__in=ids)}
        # As Funnel.create checks (again, for every other caller), in its order and words.
        unknown = [g for g in steps if g not in goals]
        if unknown:
            raise _refused("steps", f"not goals of site {site.site_id}: {unknown}")
        if Funnel.objects.filter(site=site).count() >= MAX_FUNNELS_PER_SITE:
            raise serializers.ValidationError(f"a site has at most {MAX_FUNNELS_PER_SITE} funnels")
        try:
            FunnelSpec("", tuple(goals[g].spec() for g in steps), attrs["name"], attrs["window_minutes"],
                       attrs["strict"])  # fmt: skip
        except DefinitionError as err:
            raise _refused(err.field, str(err).removeprefix(f"{err.field}: ")) from None
        _full_clean(Funnel(site=site, name=attrs["name"], window_minutes=attrs["window_minutes"],
                           strict=attrs["strict"]))  # fmt: skip
        return attrs
