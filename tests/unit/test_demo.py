"""The synthetic demo traffic: valid events, reproducible, with a realistic mix."""

from __future__ import annotations

from collections import Counter

from footfall.demo import DemoTraffic
from footfall_capture.events import validate

TS = 1_763_700_000_000


def test_every_demo_event_is_valid() -> None:
    traffic = DemoTraffic(seed=1)
    for i in range(500):
        validate(traffic.event(TS + i))


def test_same_seed_same_stream_apart_from_ids() -> None:
    a = DemoTraffic(seed=7).event(TS)
    b = DemoTraffic(seed=7).event(TS)
    assert a.event_id != b.event_id
    assert (a.path, a.referrer, a.visitor_id) == (b.path, b.referrer, b.visitor_id)


def test_mix_looks_like_real_traffic() -> None:
    traffic = DemoTraffic(seed=3, visitors=200)
    events = [traffic.event(TS + i) for i in range(5000)]
    pages = Counter(e.path for e in events)
    assert pages.most_common(1)[0][0] == "/"  # the home page leads
    assert len(pages) == 8
    assert {e.ref_type for e in events} == {"direct", "search", "social", "email", "other"}
    assert len({e.visitor_id for e in events}) <= 200


def test_a_visit_reports_engagement_and_signups_no_later_than_its_time() -> None:
    traffic = DemoTraffic(site_id="demo", seed=3)
    visits = [traffic.visit(1_800_000_000_000) for _ in range(2000)]
    assert all(b["ts"] <= 1_800_000_000_000 for v in visits for b in v)
    reports = [b for v in visits for b in v if b.get("type") == "engagement"]
    signups = [b for v in visits for b in v if b.get("type") == "signup"]
    assert 800 < len(reports) < 1200
    assert signups
    assert all(str(s["url"]).endswith("/pricing") for s in signups)
    purchases = [b for v in visits for b in v if b.get("type") == "purchase"]
    assert len(purchases) == sum(1 for s in signups if s["props"]["plan"] == "pro")  # type: ignore[index]
    assert {p["props"]["currency"] for p in purchases} == {"EUR", "USD"}  # type: ignore[index]
    for visit in visits:
        for b in visit[1:]:
            if b["type"] == "engagement":
                assert b["props"]["pageview_id"] == visit[0]["event_id"]  # type: ignore[index]
