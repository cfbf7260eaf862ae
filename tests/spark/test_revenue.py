"""Revenue of goals in the rollup (spark_jobs.conversions), against a truth computed here from the rows."""

from __future__ import annotations

import json
import math
from collections import defaultdict

from footfall.goals import GoalSpec
from footfall.revenue import revenue_of
from spark_jobs.transforms import rollup
from tests.spark.conftest import DAY, HOUR, MINUTE, T0

PURCHASE = GoalSpec("g1", "event", name="Purchase", event="purchase", revenue_prop="amount", currency_prop="currency")
DONATION = GoalSpec("g2", "event", name="Donation", event="donate", revenue_prop="sum", currency="EUR")
PLAIN = GoalSpec("g3", "event", name="Any purchase", event="purchase")
GOALS = {"s": [PURCHASE, DONATION, PLAIN]}


def at(minutes: float) -> int:
    return T0 + 9 * HOUR + int(minutes * MINUTE)


def view(event_id: str, minutes: float, visitor: str, **extra: object) -> dict[str, object]:
    return {"event_id": event_id, "type": "pageview", "ts": at(minutes), "visitor_id": visitor, "path": "/"} | extra


def event(event_id: str, name: str, minutes: float, visitor: str, props: dict, **extra: object) -> dict[str, object]:
    row = {"event_id": event_id, "type": name, "ts": at(minutes), "visitor_id": visitor, "path": None}
    return row | {"props": json.dumps(props)} | extra


# a enters from google (utm newsletter), b from twitter, c directly. Amounts: exact decimals, a
# float's drift, half-to-even rounding, lower-case currency, and every kind of invalid amount.
ROWS = [
    view("a0", 0, "a", ref_domain="google.com", utm_source="newsletter"),
    event("a1", "purchase", 1, "a", {"amount": 19.99, "currency": "EUR"}),
    event("a2", "purchase", 2, "a", {"amount": 0.1 + 0.2, "currency": "eur"}),
    event("a2", "purchase", 2, "a", {"amount": 0.1 + 0.2, "currency": "eur"}, kafka_offset=9),  # archived twice
    event("a3", "purchase", 3, "a", {"amount": "1.00005", "currency": "USD"}),  # ties: half to even
    event("a6", "purchase", 6, "a", {"amount": "123.45675", "currency": "GBP"}),
    event("a7", "purchase", 7, "a", {"amount": "2.00015", "currency": "GBP"}),
    event("a4", "purchase", 4, "a", {"amount": "lots", "currency": "EUR"}),
    event("a5", "donate", 5, "a", {"sum": 5}),
    view("b0", 0, "b", ref_domain="twitter.com"),
    event("b1", "purchase", 1, "b", {"amount": -5, "currency": "EUR"}),
    event("b2", "purchase", 2, "b", {"amount": math.nan, "currency": "EUR"}),
    event("b3", "purchase", 3, "b", {"amount": 2e9, "currency": "EUR"}),
    event("b4", "purchase", 4, "b", {"amount": 1e-7, "currency": "EUR"}),
    event("b5", "purchase", 5, "b", {"amount": 49, "currency": "EURO"}),
    event("b6", "purchase", 6, "b", {"amount": "1000000000", "currency": "USD"}),
    event("b7", "donate", 7, "b", {"sum": "12.345"}),
    view("c0", 0, "c"),
    event("c1", "purchase", 1, "c", {"amount": 7}),
    event("c2", "donate", 2, "c", {"total": 3}),
    event("x1", "purchase", 1, "x", {"amount": 100, "currency": "EUR"}, is_bot=True),
]


def truth() -> tuple[dict, dict, dict]:
    """(goal -> currency -> [conversions, units]), (goal -> conversions without revenue), and
    (goal -> (source, currency) -> [visitors, conversions, units]) from ROWS, in plain Python."""
    seen: set[str] = set()
    revenue: dict = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    unpaid: dict = defaultdict(int)
    by_source: dict = defaultdict(lambda: {"visitors": set(), "conversions": 0, "units": 0})
    source = {"a": "google.com", "b": "twitter.com", "c": "(direct)"}
    for row in ROWS:
        if row["event_id"] in seen or row.get("is_bot"):
            continue
        seen.add(str(row["event_id"]))
        for goal in GOALS["s"]:
            if not goal.has_revenue or row["type"] != goal.event:
                continue
            got = revenue_of(json.loads(str(row["props"])), goal.revenue_prop, goal.currency_prop, goal.currency)
            if got is None:
                unpaid[goal.goal_id] += 1
                continue
            revenue[goal.goal_id][got[0]][0] += 1
            revenue[goal.goal_id][got[0]][1] += got[1]
            counted = by_source[(goal.goal_id, source[str(row["visitor_id"])], got[0])]
            counted["visitors"].add(row["visitor_id"])
            counted["conversions"] += 1
            counted["units"] += got[1]
    sources = {key: [len(c["visitors"]), c["conversions"], c["units"]] for key, c in by_source.items()}
    return revenue, unpaid, sources


def test_revenue_per_goal_currency_and_source_equals_the_truth(make_events, make_zones, changes) -> None:
    rows = rollup(make_events(*ROWS), make_zones({}), [DAY], changes, goals=GOALS)["breakdowns"]
    revenue, unpaid, sources = truth()
    got = {(r.goal_id, r.currency): [r.events, r.revenue] for r in rows.where("dimension = 'goal_revenue'").collect()}
    assert got == {(g, c): v for g, per in revenue.items() for c, v in per.items()}
    # The truth holds what the test is about: exact sums, rounding, several currencies.
    assert got[("g1", "EUR")] == [2, 199_900 + 3_000]
    assert got[("g1", "USD")] == [2, 10_000 + 10_000_000_000_000]
    assert got[("g2", "EUR")] == [2, 50_000 + 123_450]
    assert got[("g1", "GBP")] == [2, 1_234_568 + 20_002]
    goal_rows = {r.value: (r.events, r.no_revenue) for r in rows.where("dimension = 'goal'").collect()}
    assert goal_rows == {"g1": (13, unpaid["g1"]), "g2": (3, unpaid["g2"]), "g3": (13, None)}
    assert unpaid == {"g1": 7, "g2": 1}
    by_source = {
        (r.goal_id, r.value.split("\x1f")[2], r.currency): [r.visitors, r.events, r.revenue]
        for r in rows.where("dimension = 'goal_revsrc:ref'").collect()
    }
    assert by_source == sources
    campaign = rows.where("dimension = 'goal_revsrc:utm_source'").collect()
    assert {(r.value, r.revenue) for r in campaign} == {
        ("g1\x1fEUR\x1fnewsletter", 202_900), ("g1\x1fUSD\x1fnewsletter", 10_000), ("g2\x1fEUR\x1fnewsletter", 50_000),
        ("g1\x1fGBP\x1fnewsletter", 1_254_570),
    }  # fmt: skip
