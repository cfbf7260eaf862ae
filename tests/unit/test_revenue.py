"""Revenue amounts and currencies as every layer reads them (footfall.revenue), and revenue goals' rules."""

from __future__ import annotations

import math

import pytest

from footfall.goals import DefinitionError, GoalSpec
from footfall.revenue import MAX_AMOUNT, amount_units, currency_of, decimal_text, ratio_text, revenue_of


@pytest.mark.parametrize(
    ("value", "units"),
    [
        (49, 490_000),
        (19.99, 199_900),
        ("19.99", 199_900),
        ("0", 0),
        (0.1 + 0.2, 3_000),  # 0.30000000000000004: rounded to 4 places, no float drift
        ("1.00005", 10_000),  # half to even
        ("1.00015", 10_002),
        (MAX_AMOUNT, MAX_AMOUNT * 10_000),
        (3.0, 30_000),
    ],
)
def test_valid_amounts_are_exact_units(value: object, units: int) -> None:
    assert amount_units(value) == units


@pytest.mark.parametrize(
    "value",
    ["forty", -5, "-5", math.nan, math.inf, None, True, "", " 5", "5.", "1e3", 1e20, 1.5e-7, MAX_AMOUNT + 1, [1], {}],
)
def test_invalid_amounts_have_none(value: object) -> None:
    assert amount_units(value) is None


def test_currencies_are_three_letters_read_upper_case() -> None:
    assert currency_of("eur") == "EUR"
    assert [currency_of(v) for v in ("EURO", "E1R", 123, None, "")] == [None] * 5


def test_revenue_of_a_goals_event() -> None:
    props = {"amount": "12.5", "currency": "usd"}
    assert revenue_of(props, "amount", "currency", "") == ("USD", 125_000)
    assert revenue_of(props, "amount", "", "EUR") == ("EUR", 125_000)
    assert revenue_of({"amount": 1}, "amount", "currency", "") is None  # no currency
    assert revenue_of({"currency": "EUR"}, "amount", "currency", "") is None
    assert revenue_of(None, "amount", "", "EUR") is None


def test_decimal_texts_keep_two_to_four_places() -> None:
    assert decimal_text(199_900) == "19.99"
    assert decimal_text(50_000) == "5.00"
    assert decimal_text(1_234) == "0.1234"
    assert decimal_text(0) == "0.00"
    assert ratio_text(10_000, 3) == "0.3333"
    assert ratio_text(5, 2) == "0.0002"  # 2.5 units: half to even
    assert ratio_text(1, 0) is None


def test_revenue_goals_name_their_amount_and_one_currency() -> None:
    goal = GoalSpec("1", "event", "Purchase", event="purchase", revenue_prop="amount", currency_prop="currency")
    assert goal.has_revenue
    assert GoalSpec.from_json(goal.to_json()) == goal
    assert GoalSpec("2", "event", event="purchase", revenue_prop="amount", currency="EUR").has_revenue
    refused = [
        ({"revenue_prop": "amount"}, "currency"),
        ({"revenue_prop": "amount", "currency": "EUR", "currency_prop": "c"}, "currency"),
        ({"currency": "EUR"}, "revenue_prop"),
        ({"revenue_prop": "amount", "currency": "eur"}, "currency"),
        ({"revenue_prop": "amount", "currency": "EUR", "prop": "plan", "value": "pro"}, "prop"),
    ]
    for fields, field in refused:
        with pytest.raises(DefinitionError) as err:
            GoalSpec("3", "event", event="purchase", **fields)  # type: ignore[arg-type]
        assert err.value.field == field
    with pytest.raises(DefinitionError):
        GoalSpec("4", "page", path="/thanks", revenue_prop="amount", currency="EUR")


def test_a_goals_revenue_answer_per_currency() -> None:
    from footfall.revenue import RevenueSums
    from query.conversions import revenue_answer

    sums = RevenueSums({"USD": (1, 55_000), "EUR": (2, 202_900)}, without=3)
    sums.merge(RevenueSums({"EUR": (1, 10_000)}, without=1))
    assert revenue_answer(sums, 4) == {
        "currencies": [
            {"currency": "EUR", "total": "21.29", "conversions": 3, "average": "7.0967", "per_visitor": "5.3225"},
            {"currency": "USD", "total": "5.50", "conversions": 1, "average": "5.50", "per_visitor": "1.375"},
        ],
        "without_revenue": 4,
    }
    assert revenue_answer(RevenueSums(), None) == {"currencies": [], "without_revenue": 0}
    assert revenue_answer(RevenueSums({"EUR": (1, 5)}), 0)["currencies"][0]["per_visitor"] is None
