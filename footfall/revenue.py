"""Revenue of goals: how an amount and its currency are read from a custom event, the same in
every layer. Pure: no Django, no stores.

An amount is the text of the goal's revenue property (:func:`footfall.goals.prop_text`, so a
JSON number and the string of its digits read alike) when it is a plain non-negative decimal,
``0`` to :data:`MAX_AMOUNT`; it is kept in integer units of 10^-:data:`DECIMALS`, rounded
half-to-even (``19.99`` is 199,900 units), so that sums are exact. A currency is three
letters (ISO 4217's shape, read upper-case): the goal's fixed one, or the text of its currency
property. A conversion whose amount or currency is anything else (text, negative, NaN,
written with an exponent, over the maximum, missing) still counts as a conversion, *without
revenue*, and answers say how many there were. No exchange rates: each currency is summed and
reported apart.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Final

from footfall.goals import prop_text

DECIMALS: Final = 4
UNIT: Final = 10**DECIMALS  # units per currency unit
MAX_AMOUNT: Final = 1_000_000_000  # per event, in currency units
# A plain decimal as prop_text writes a number: digits, at most one point, no sign or exponent.
# The bounds keep Spark's DECIMAL(30, 20) (spark_jobs.conversions) able to hold every match.
AMOUNT_TEXT: Final = re.compile(r"[0-9]{1,10}(\.[0-9]{1,20})?")
CURRENCY_TEXT: Final = re.compile(r"[A-Za-z]{3}")
_QUANTUM: Final = Decimal(1).scaleb(-DECIMALS)


def amount_units(value: object) -> int | None:
    """The amount of a revenue property's JSON ``value`` in units (see the module), or None when it is no
    valid amount."""
    text = prop_text(value)
    if not AMOUNT_TEXT.fullmatch(text):
        return None
    amount = Decimal(text).quantize(_QUANTUM, rounding=ROUND_HALF_EVEN)
    if amount > MAX_AMOUNT:
        return None
    return int(amount.scaleb(DECIMALS))


def currency_of(value: object) -> str | None:
    """The currency a currency property's JSON ``value`` names (upper-case), or None."""
    text = prop_text(value)
    return text.upper() if CURRENCY_TEXT.fullmatch(text) else None


def revenue_of(
    props: Mapping[str, object] | None, revenue_prop: str, currency_prop: str, currency: str
) -> tuple[str, int] | None:
    """``(currency, units)`` of an event with ``props`` for a goal reading its amount from
    ``revenue_prop`` and its currency from ``currency_prop`` (or the fixed ``currency``); None
    when the conversion has no valid revenue."""
    props = props or {}
    if revenue_prop not in props:
        return None
    units = amount_units(props[revenue_prop])
    if units is None:
        return None
    code = currency or (currency_of(props[currency_prop]) if currency_prop in props else None)
    return None if code is None else (code, units)


@dataclass
class RevenueSums:
    """A goal's revenue over some buckets: per currency, the conversions with revenue in it and the
    sum of their amounts in units; and the conversions without valid revenue."""

    currencies: dict[str, tuple[int, int]] = field(default_factory=dict)
    without: int = 0

    def add(self, currency: str, conversions: int, units: int) -> None:
        before = self.currencies.get(currency, (0, 0))
        self.currencies[currency] = (before[0] + conversions, before[1] + units)

    def merge(self, other: RevenueSums) -> None:
        for currency, (conversions, units) in other.currencies.items():
            self.add(currency, conversions, units)
        self.without += other.without

    @property
    def paid(self) -> int:
        """Conversions with revenue, in any currency."""
        return sum(conversions for conversions, _ in self.currencies.values())


def decimal_text(units: int | Decimal) -> str:
    """``units`` (possibly a fraction of one, for an average) as a decimal in currency units: rounded
    half-to-even to :data:`DECIMALS` places, trailing zeros dropped down to two (``"19.99"``,
    ``"0.1234"``, ``"5.00"``). Text, so that no JSON reader turns it into a binary float."""
    amount = (Decimal(units) / UNIT).quantize(_QUANTUM, rounding=ROUND_HALF_EVEN)
    text = f"{amount:f}"
    whole, _, fraction = text.partition(".")
    fraction = fraction.rstrip("0").ljust(2, "0")
    return f"{whole}.{fraction}"


def money_text(currencies: object, field: str = "total") -> str:
    """One figure of a goal's revenue answer (``query.conversions.revenue_answer``'s ``currencies``)
    over its currencies, for people: ``"EUR 20.29, USD 5.50"``; "" when there is none."""
    if not isinstance(currencies, list):
        return ""
    return ", ".join(f"{c['currency']} {c[field]}" for c in currencies if c.get(field) is not None)


def ratio_text(units: int, count: int) -> str | None:
    """``units / count`` as :func:`decimal_text` writes it, None when ``count`` is 0."""
    return decimal_text(Decimal(units) / count) if count else None
