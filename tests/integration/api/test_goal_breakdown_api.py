"""A breakdown filtered by goal through the API over the rollup's attribution rows in Mongo: settled
days summed, days rolled up before the goal or the attribution named, and clear errors for what
cannot be answered. (That the unsettled part is missing, never estimated, is a merge rule:
tests/unit/query/test_merge_events.py.)"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.test import Client
from pymongo.database import Database

from footfall.config import Config
from footfall.models import Goal
from historical.store import BREAKDOWNS, GOAL_SOURCES, ROLLUP_COLLECTIONS, RUNS, DayDocuments, connect, load_day
from tests.integration.api.conftest import SiteKey, make_site

pytestmark = pytest.mark.django_db
SEP = "\x1f"


@pytest.fixture
def utc_key(db: None) -> SiteKey:
    return make_site(tz="UTC")


@pytest.fixture
def mongo(cfg: Config, utc_key: SiteKey) -> Iterator[Database]:
    client, database = connect(cfg.mongo_url, cfg.mongo_db)
    try:
        yield database
    finally:
        for name in (*ROLLUP_COLLECTIONS, RUNS):
            database[name].delete_many({"site_id": utc_key.site.site_id})
        client.close()


def sources(goal: Goal, dim: str, rows: dict[str, tuple[int, int]]) -> list[dict[str, object]]:
    return [
        {"dimension": f"goal_src:{dim}", "value": f"{goal.pk}{SEP}{value}", "goal_id": str(goal.pk), "pageviews": 0,
         "visitors": visitors, "events": conversions}
        for value, (visitors, conversions) in rows.items()
    ]  # fmt: skip


def base(dim: str, rows: dict[str, int]) -> list[dict[str, object]]:
    return [{"dimension": f"goal_base:{dim}", "value": v, "pageviews": 0, "visitors": n} for v, n in rows.items()]


def load(db: Database, site: str, day: str, goals: list[Goal], docs: list[dict],
         attributed: object = GOAL_SOURCES) -> None:  # fmt: skip
    run = {"status": "complete", "tz": "UTC", "goal_ids": [str(g.pk) for g in goals]}
    if attributed is not None:
        run["goal_sources"] = attributed
    load_day(db, DayDocuments(site, day, {"pageviews": 1, "visitors": 1}, [], docs, run))


def test_settled_days_sum_per_value_with_one_rate_definition(client: Client, utc_key: SiteKey, mongo: Database) -> None:
    signup = Goal.objects.create(site=utc_key.site, name="Signup", kind="event", event="signup")
    other = Goal.objects.create(site=utc_key.site, name="Pricing", kind="page", path="/pricing")
    site = utc_key.site.site_id
    load(mongo, site, "2026-10-01", [signup, other], [
        *sources(signup, "ref", {"google.com": (3, 5), "twitter.com": (1, 1)}),
        *sources(other, "ref", {"bing.com": (9, 9)}),  # another goal's rows never count
        *sources(signup, "country", {"DE": (4, 6)}),  # another dimension's neither
        *base("ref", {"google.com": 30, "twitter.com": 4, "bing.com": 50, "(direct)": 70}),
    ])  # fmt: skip
    load(mongo, site, "2026-10-02", [signup, other], [
        *sources(signup, "ref", {"google.com": (2, 2), "(direct)": (4, 4)}),
        *base("ref", {"google.com": 20, "(direct)": 80}),
    ])  # fmt: skip
    answer = utc_key.get(client, "breakdown/referrers", goal=signup.pk, **{"from": "2026-10-01", "to": "2026-10-03"})
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["goal"] == {"goal_id": str(signup.pk), "name": "Signup"}
    assert body["metrics"] == ["visitors", "conversions", "conversion_rate"]
    assert body["results"] == [
        {"value": "google.com", "visitors": 5, "conversions": 7, "conversion_rate": round(5 / 50, 6)},
        {"value": "(direct)", "visitors": 4, "conversions": 4, "conversion_rate": round(4 / 150, 6)},
        {"value": "twitter.com", "visitors": 1, "conversions": 1, "conversion_rate": 0.25},
    ]
    assert body["total"] == 3
    assert body["sources"]["batch"]["days"] == ["2026-10-01", "2026-10-02"]
    # The rows live apart from the other breakdowns, which never pass over them.
    assert mongo[GOAL_SOURCES].count_documents({"site_id": site}) == 12
    assert mongo[BREAKDOWNS].count_documents({"site_id": site}) == 0
    assert any("first session of the day" in n and "a range sums the days" in n for n in body["sources"]["notes"])

    # Paged like the other breakdowns: the second row alone, its rate from its own base.
    second = utc_key.get(client, "breakdown/referrers", goal=signup.pk, limit=1, page=2,
                         **{"from": "2026-10-01", "to": "2026-10-03"}).json()  # fmt: skip
    assert second["results"] == body["results"][1:2]
    assert second["total"] == 3


def test_days_rolled_up_before_the_goal_or_the_attribution_are_named(client: Client, utc_key: SiteKey,
                                                                     mongo: Database) -> None:  # fmt: skip
    """A day counted without the goal, one rolled up before attribution rows existed, and one whose
    rows were kept among the other breakdowns (the layout before rollup_goal_sources) count nothing
    (their rows, had they any, would understate the rate) and the notes say so."""
    signup = Goal.objects.create(site=utc_key.site, name="Signup", kind="event", event="signup")
    site = utc_key.site.site_id
    load(mongo, site, "2026-10-01", [], base("ref", {"google.com": 100}))
    load(mongo, site, "2026-10-02", [signup], [*sources(signup, "ref", {"google.com": (9, 9)}),
                                               *base("ref", {"google.com": 10})], attributed=None)  # fmt: skip
    load(mongo, site, "2026-10-03", [signup], [*sources(signup, "ref", {"google.com": (5, 5)}),
                                               *base("ref", {"google.com": 20})], attributed=True)  # fmt: skip
    load(mongo, site, "2026-10-04", [signup], [*sources(signup, "ref", {"google.com": (2, 3)}),
                                               *base("ref", {"google.com": 8})])  # fmt: skip
    body = utc_key.get(client, "breakdown/referrers", goal=signup.pk, **{"from": "2026-10-01", "to": "2026-10-05"})
    body = body.json()
    assert body["results"] == [{"value": "google.com", "visitors": 2, "conversions": 3, "conversion_rate": 0.25}]
    notes = " ".join(body["sources"]["notes"])
    assert f"goal {signup.pk} (Signup): 3 settled day(s) from 2026-10-01 to 2026-10-03" in notes


def test_what_cannot_be_answered_is_refused_clearly(client: Client, utc_key: SiteKey,
                                                    other_site_key: SiteKey) -> None:  # fmt: skip
    signup = Goal.objects.create(site=utc_key.site, name="Signup", kind="event", event="signup")
    elsewhere = Goal.objects.create(site=other_site_key.site, name="Theirs", kind="event", event="signup")
    pages = utc_key.get(client, "breakdown/pages", goal=signup.pk)
    assert pages.status_code == 400
    assert pages.json()["error"]["parameter"] == "dimension"
    assert "referrers" in pages.json()["error"]["message"]
    assert "entry_pages" in pages.json()["error"]["message"]
    for goal, status, parameter in (("abc", 400, "goal"), ("", 400, "goal"), ("-1", 400, "goal")):
        got = utc_key.get(client, "breakdown/referrers", goal=goal)
        assert (got.status_code, got.json()["error"]["parameter"]) == (status, parameter), goal
    assert utc_key.get(client, "breakdown/referrers", goal=signup.pk, metrics="pageviews").status_code == 400
    assert utc_key.get(client, "breakdown/referrers", goal=999_999).status_code == 404
    assert utc_key.get(client, "breakdown/referrers", goal=elsewhere.pk).status_code == 404
