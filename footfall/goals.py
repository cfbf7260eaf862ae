"""Goals and funnels as the layers see them: plain definitions, matching, and their JSON form.

A goal is reached by a page view whose path matches a pattern (``*`` stands for any run of
characters, ``/`` included; the rest is literal and the whole path must match), or by a
custom event of a given name, optionally only when one of its properties equals a value. A
funnel is 2 to :data:`MAX_FUNNEL_STEPS` goals reached in order by one visitor, within one
session or within a window of minutes.

The Django models (:mod:`footfall.models`) store them; the speed layer, the Spark job and
the query layer all match through this module, so a goal means the same in every layer.
Pure: no Django, no stores.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Context, Decimal
from typing import Final, Literal

import msgspec

PAGE: Final = "page"
EVENT: Final = "event"
GoalKind = Literal["page", "event"]

MIN_FUNNEL_STEPS: Final = 2
MAX_FUNNEL_STEPS: Final = 8
MAX_FUNNEL_WINDOW_MINUTES: Final = 24 * 60
EVENT_NAME: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")  # as the tracker and collector accept
MAX_PATTERN: Final = 512
PROP_NAME: Final = re.compile(r"^[^\x1f]{1,64}$")  # a property a goal reads: U+001F separates parts in keys
CURRENCY_CODE: Final = re.compile(r"^[A-Z]{3}$")  # ISO 4217's shape: a goal's fixed currency


# Bucket bounds (ms) of the histogram of times between two funnel steps: 41 bounds, geometric
# from 1 s to 7 days (each about 1.395 times the one before), so a range of days can give a
# median from summed histograms. Bucket 0 holds times under 1 s, bucket i (1 to 40) times in
# [bounds[i-1], bounds[i]), bucket 41 times of 7 days or more. Stored histograms are lists of
# len(bounds) + 1 counts in this order: never change these bounds without re-rolling history.
FUNNEL_TIME_BOUNDS_MS: Final[tuple[int, ...]] = tuple(round(1000 * 604_800 ** (k / 40)) for k in range(41))


class DefinitionError(ValueError):
    """A goal or funnel definition that cannot be matched; names the field at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


# The very end of the text in both dialects: "$" also matches before a final newline, and
# Python's "\Z" is Java's "\z" (Java's "\Z" is "$" again).
_END: Final = "(?!.)"


def path_regex(pattern: str) -> str:
    """An anchored regular expression for ``pattern`` that Python's ``re`` and Java's (Spark's
    ``rlike``) read alike: literal parts escaped, ``*`` matching any run of characters.

    Written as the linear glob match, not as ``.*`` between the parts: each middle part is
    taken at its earliest place in an atomic group, which never needs revisiting (an
    earlier place leaves more room for the rest), so a pattern with several ``*`` cannot
    backtrack for ages on a long path made up to defeat it (paths come from traffic)."""
    parts = [re.escape(part) for part in pattern.split("*")]
    if len(parts) == 1:
        return f"(?s)^{parts[0]}{_END}"
    middle = "".join(f"(?>.*?{part})" for part in parts[1:-1])
    return f"(?s)^{parts[0]}{middle}.*{parts[-1]}{_END}"


@dataclass(frozen=True, slots=True)
class GoalSpec:
    """One goal. ``goal_id`` is stable (the model's primary key, as a string)."""

    goal_id: str
    kind: GoalKind
    name: str = ""
    path: str = ""  # page goals: the pattern
    event: str = ""  # event goals: the event name
    prop: str = ""  # event goals, optional: the property that must equal ``value``
    value: str = ""
    # Revenue (event goals, optional; footfall.revenue): the amount's property, and the
    # currency's property or one fixed currency.
    revenue_prop: str = ""
    currency_prop: str = ""
    currency: str = ""

    def __post_init__(self) -> None:
        if self.kind == PAGE:
            if not self.path.startswith(("/", "*")) or len(self.path) > MAX_PATTERN:
                raise DefinitionError("path", "must start with / or * and be at most 512 characters")
            if self.revenue_prop or self.currency_prop or self.currency:
                raise DefinitionError("revenue_prop", "only custom-event goals carry revenue")
        elif self.kind == EVENT:
            if not EVENT_NAME.match(self.event):
                raise DefinitionError("event", "must be an event name the tracker sends (letters, digits, _.:-)")
            if self.value and not self.prop:
                raise DefinitionError("prop", "is required when a property value is given")
            self._check_revenue()
        else:
            raise DefinitionError("kind", "must be 'page' or 'event'")

    def _check_revenue(self) -> None:
        if not (self.revenue_prop or self.currency_prop or self.currency):
            return
        if not PROP_NAME.match(self.revenue_prop):
            raise DefinitionError("revenue_prop", "is required with a currency: the property holding the amount")
        if bool(self.currency_prop) == bool(self.currency):
            raise DefinitionError("currency", "give either a fixed currency or the property holding it, not both")
        if self.currency_prop and not PROP_NAME.match(self.currency_prop):
            raise DefinitionError("currency_prop", "must be a property name of 1 to 64 characters")
        if self.currency and not CURRENCY_CODE.match(self.currency):
            raise DefinitionError("currency", "must be a three-letter ISO 4217 code in capitals, e.g. EUR")
        if self.prop:
            # The speed layer sums amounts per event name, property and currency when it counts
            # (realtime.aggregate), not per goal: a property condition could not be applied.
            raise DefinitionError("prop", "a revenue goal counts every event of its name: no property condition")

    @property
    def has_revenue(self) -> bool:
        return bool(self.revenue_prop)

    @property
    def regex(self) -> str:
        """:func:`path_regex` of a page goal's pattern ("" for event goals)."""
        return path_regex(self.path) if self.kind == PAGE else ""

    def matches(self, type_: str, path: str | None, props: Mapping[str, object] | None) -> bool:
        """Whether an event of ``type_`` on ``path`` with ``props`` reaches this goal.

        Property values compare as text, as they are archived (JSON scalars: ``true``,
        ``3``, ``pro``): a goal on ``plan = pro`` matches ``{"plan": "pro"}``."""
        if self.kind == PAGE:
            return type_ == "pageview" and path is not None and re.match(self.regex, path) is not None
        if type_ != self.event:
            return False
        if not self.prop:
            return True
        return self.prop in (props or {}) and prop_text((props or {})[self.prop]) == self.value

    def to_json(self) -> dict[str, str]:
        return {
            "goal_id": self.goal_id, "kind": self.kind, "name": self.name, "path": self.path,
            "event": self.event, "prop": self.prop, "value": self.value, "revenue_prop": self.revenue_prop,
            "currency_prop": self.currency_prop, "currency": self.currency,
        }  # fmt: skip

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> GoalSpec:
        fields = ("goal_id", "kind", "name", "path", "event", "prop", "value", "revenue_prop", "currency_prop",
                  "currency")  # fmt: skip
        return cls(**{f: str(data.get(f) or "") for f in fields})  # type: ignore[arg-type]


def prop_text(value: object) -> str:
    """A property value as text, the same in every layer: as the batch layer reads it from the
    archived JSON (``msgspec``'s encoding of the value) into a Spark variant and casts it to text.

    Strings as they are; booleans ``true``/``false``; null (and NaN or infinity, which JSON
    archives as null) as ""; integers of up to 38 digits and numbers the archive writes without
    an exponent as exact decimals without trailing zeros (``3``, ``3.0`` -> ``3``, ``19.99``);
    others (magnitudes from 1e16, below 1e-5, and longer integers) as doubles in Java's
    ``Double.toString`` form with the shortest digits (``1.0E20``, ``1.5E-7``). Java 17 writes
    a few of those doubles with one digit more than needed (JDK-4511638; fixed in Java 19), so
    on Java 17 such a value reads differently in the batch layer."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if abs(value) < _DECIMAL_LIMIT:
            return str(value)
        try:
            return _java_double(float(value))
        except OverflowError:  # beyond any double: nothing reads it as a number
            return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return ""
        text = msgspec.json.encode(value).decode()
        if "e" in text or "E" in text:
            return _java_double(value)
        if "." in text:
            text = text.rstrip("0").rstrip(".")
        return "0" if text == "-0" else text
    return str(value)


# Spark's variant holds JSON integers below this exactly (as a long or a 38-digit decimal).
_DECIMAL_LIMIT: Final = 10**38


def _java_double(value: float) -> str:
    """``value`` as Java's ``Double.toString`` writes magnitudes outside [1e-3, 1e7):
    ``d.dddE<n>`` with the shortest digits that read back as ``value`` (``repr``'s)."""
    shortest = Decimal(repr(abs(value))).normalize()
    if len(shortest.as_tuple().digits) == 1:
        # Java writes two digits at least, then the two closest to the exact value (5e-324 is
        # 4.9E-324): among those that still read back as ``value``, which it does if closer.
        two = Context(prec=2, rounding=ROUND_HALF_EVEN).plus(Decimal(abs(value)))
        shortest = two.normalize() if float(two) == abs(value) else shortest
    digits = "".join(map(str, shortest.as_tuple().digits))
    sign = "-" if value < 0 else ""
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{shortest.adjusted()}"


@dataclass(frozen=True, slots=True)
class FunnelSpec:
    """A funnel: ``steps`` reached in order by one visitor.

    ``window_minutes`` 0 means within one session (page views and events no more than the
    session gap apart); otherwise every step within that many minutes of the first. In
    ``strict`` mode no other event of the visitor may come between two steps."""

    funnel_id: str
    steps: tuple[GoalSpec, ...]
    name: str = ""
    window_minutes: int = 0
    strict: bool = False

    def __post_init__(self) -> None:
        if not MIN_FUNNEL_STEPS <= len(self.steps) <= MAX_FUNNEL_STEPS:
            raise DefinitionError("steps", f"a funnel has {MIN_FUNNEL_STEPS} to {MAX_FUNNEL_STEPS} steps")
        if not 0 <= self.window_minutes <= MAX_FUNNEL_WINDOW_MINUTES:
            raise DefinitionError("window_minutes", f"must be 0 (one session) to {MAX_FUNNEL_WINDOW_MINUTES}")

    def to_json(self) -> dict[str, object]:
        return {
            "funnel_id": self.funnel_id, "name": self.name, "window_minutes": self.window_minutes,
            "strict": self.strict, "steps": [s.to_json() for s in self.steps],
        }  # fmt: skip

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> FunnelSpec:
        steps = data.get("steps")
        if not isinstance(steps, list):
            raise DefinitionError("steps", "must be a list of goals")
        return cls(
            funnel_id=str(data.get("funnel_id") or ""),
            steps=tuple(GoalSpec.from_json(s) for s in steps),
            name=str(data.get("name") or ""),
            window_minutes=int(data.get("window_minutes") or 0),  # type: ignore[call-overload]
            strict=bool(data.get("strict")),
        )
