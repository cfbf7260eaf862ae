"""The alert checks against the real stack: counters written through the speed layer's write
path, rollups loaded into the Mongo-wire server, a real realtime worker stopped for real."""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
import uuid
from collections.abc import Iterator

import msgspec
import pymongo
import pytest
import redis

from alerts.checks import check_rule, run_checks
from alerts.measure import Measurer
from alerts.models import AlertRule, Channel, Delivery, Episode
from footfall.config import Config
from footfall.demo import DemoTraffic
from footfall.models import Goal, Site
from historical.buckets import ms
from historical.reads import RollupReads
from historical.store import DayDocuments, hour_document, load_day, record_reconciliation
from query.conversions import Conversions
from query.health import PipelineHealth
from query.service import QueryService
from realtime.keys import KeyLayout
from realtime.reads import RealtimeQueries
from realtime.runtime import GROUP as REALTIME_GROUP
from realtime.store import CounterStore
from tests.integration.kafka_tail import produce
from tests.integration.realtime.conftest import Workers, wait_consumed
from tests.integration.realtime.test_exactly_once import end_offsets

NEWS = "news.example"


@dataclasses.dataclass
class Stack:
    cfg: Config
    store: CounterStore
    db: pymongo.database.Database

    def measurer(self, now: dt.datetime, cfg: Config | None = None) -> Measurer:
        svc = QueryService(
            RollupReads(self.db), RealtimeQueries(self.store), self.cfg.realtime_retention_s, now=lambda: now
        )
        return Measurer(svc, Conversions(svc), PipelineHealth(cfg or self.cfg, self.store, RollupReads(self.db)), now)


@pytest.fixture
def stack(cfg: Config, mongo_db: pymongo.database.Database) -> Iterator[Stack]:
    client = redis.Redis.from_url(cfg.redis_url)
    yield Stack(cfg, CounterStore(client, KeyLayout(retention_s=cfg.realtime_retention_s)), mongo_db)
    client.close()


def make_rule(kind: str, threshold: float, tz: str = "UTC", **kw: object) -> AlertRule:
    site = Site.objects.create(site_id=f"al-{uuid.uuid4().hex[:8]}", name="Alerts test", domains=["a.example"],
                               timezone=tz)  # fmt: skip
    if kind == "goal":
        kw["goal"] = Goal.objects.create(site=site, name="Signup", kind="page", path="/signup")
    rule = AlertRule.objects.create(site=site, name=f"{kind} rule", kind=kind, threshold=threshold, **kw)
    rule.full_clean()
    rule.channels.add(Channel.objects.create(site=site, name="ops", kind="email", email="ops@example.com"))
    return rule


def deliveries(rule: AlertRule) -> list[tuple[str, str]]:
    return sorted(Delivery.objects.filter(episode__rule=rule).values_list("event", "status"))


def test_a_burst_opens_one_spike_episode_naming_its_referrer_and_resolves(db: None, stack: Stack) -> None:
    """A burst from one referrer opens one episode (one delivery), later checks neither open a
    second nor deliver again, and it resolves once the burst has passed."""
    rule = make_rule("spike", 3.0, window_minutes=10)
    site = rule.site_id
    now = dt.datetime.now(dt.UTC)
    now_ms = ms(now)
    minute = now_ms // 60_000 * 60_000
    gen = DemoTraffic(site_id=site, seed=7)
    # Three hours of steady traffic (2 page views a minute), then 300 page views from one
    # referrer in the 10 whole minutes the detector calls recent.
    steady = [gen.event(minute - 190 * 60_000 + i * 30_000) for i in range(380)]
    burst = [
        msgspec.structs.replace(
            gen.event(minute - 10 * 60_000 + i * 2_000), referrer=f"https://{NEWS}/story", ref_domain=NEWS,
            ref_type="other", utm=None,
        )
        for i in range(300)
    ]  # fmt: skip
    stack.store.apply([*steady, *burst], now_ms)

    outcome = check_rule(rule, stack.measurer(now), now)
    assert outcome.action == "opened", outcome
    episode = Episode.objects.get(rule=rule)
    assert episode.value >= 3.0
    assert not episode.suppressed
    assert episode.details["top_referrers"][0]["value"] == NEWS
    assert episode.details["series"]
    assert episode.details["subject"] == "site"
    assert deliveries(rule) == [("opened", "pending")]

    for later in (now + dt.timedelta(seconds=20), now + dt.timedelta(seconds=40)):
        assert check_rule(rule, stack.measurer(later), later).action == "kept"
    assert Episode.objects.filter(rule=rule).count() == 1
    assert deliveries(rule) == [("opened", "pending")]

    after = now + dt.timedelta(minutes=30)  # the burst is in the baseline now, nothing recent
    assert check_rule(rule, stack.measurer(after), after).action == "resolved"
    episode.refresh_from_db()
    assert episode.resolved_at == after
    assert deliveries(rule) == [("opened", "pending"), ("resolved", "pending")]


NOW = dt.datetime(2026, 11, 23, 12, tzinfo=dt.UTC)


def load_usual_weeks(stack: Stack, site: str, weeks: int, visitors: int) -> None:
    """Settled days a week, two, ... before NOW with ``visitors`` in each of the two hours
    before NOW's time of day (the window of a 60-minute drop rule at NOW)."""
    for k in range(1, weeks + 1):
        day_start = dt.datetime.combine((NOW - dt.timedelta(weeks=k)).date(), dt.time(), dt.UTC)
        day = day_start.date().isoformat()
        hours = []
        for hour in (10, 11):
            doc = hour_document(day, "UTC", ms(day_start + dt.timedelta(hours=hour)))
            hours.append({**doc, "pageviews": 2 * visitors, "visitors": visitors, "sessions": visitors})
        daily = {"pageviews": 4 * visitors, "visitors": 2 * visitors, "sessions": 2 * visitors, "bounces": 0,
                 "visit_duration_s": 30.0}  # fmt: skip
        load_day(stack.db, DayDocuments(site, day, daily, hours, [], {"status": "complete", "tz": "UTC"}))


def test_a_site_that_goes_quiet_opens_a_drop_episode(db: None, stack: Stack) -> None:
    """No visitors in the last hour, against 100 in that hour of the previous four weeks."""
    rule = make_rule("drop", 0.5, window_minutes=60)
    load_usual_weeks(stack, rule.site_id, 4, 100)
    assert check_rule(rule, stack.measurer(NOW), NOW).action == "opened"
    details = Episode.objects.get(rule=rule).details
    assert details["value"] == 0.0
    assert details["usual"] == 100.0
    assert details["threshold"] == 50.0
    assert deliveries(rule) == [("opened", "pending")]


def test_a_drop_rule_with_too_little_history_is_not_judged(db: None, stack: Stack) -> None:
    rule = make_rule("drop", 0.5, window_minutes=60)
    load_usual_weeks(stack, rule.site_id, 1, 100)
    outcome = check_rule(rule, stack.measurer(NOW), NOW)
    assert outcome.action == "unknown"
    assert "too little history" in outcome.reason
    assert not Episode.objects.filter(rule=rule).exists()


def test_max_per_day_records_further_episodes_suppressed(db: None, stack: Stack) -> None:
    """A rule that delivered its one episode of the day records the next one, undelivered."""
    rule = make_rule("drop", 0.5, window_minutes=60, max_per_day=1)
    load_usual_weeks(stack, rule.site_id, 4, 100)
    Episode.objects.create(rule=rule, opened_at=NOW - dt.timedelta(hours=3), resolved_at=NOW - dt.timedelta(hours=2),
                           value=10, peak=5)  # fmt: skip
    assert check_rule(rule, stack.measurer(NOW), NOW).action == "suppressed"
    assert Episode.objects.get(rule=rule, resolved_at__isnull=True).suppressed
    assert deliveries(rule) == []


def test_a_stopped_realtime_worker_opens_the_lag_episode_in_time(db: None, stack: Stack, rt_topic: str) -> None:
    """The lag rule opens within its threshold plus one check interval of the first event the
    stopped worker leaves uncounted."""
    threshold_s, interval_s = 5.0, 3.0
    rule = make_rule("realtime_lag", threshold_s)
    cfg = dataclasses.replace(stack.cfg, events_topic=rt_topic)
    pool = Workers(rt_topic, REALTIME_GROUP)
    gen = DemoTraffic(site_id=rule.site_id, seed=9)
    try:
        pool.start()
        produce(cfg, rt_topic, [gen.event(int(time.time() * 1000)) for _ in range(50)])
        wait_consumed(stack.store, REALTIME_GROUP, rt_topic, end_offsets(cfg, rt_topic))
        # The worker commits its offsets to Kafka right after its counts: wait for the lag itself
        # to reach 0 without checking the rule, so that a slow first produce (its events are
        # already seconds old when counted) cannot open an episode before the worker stops.
        health = PipelineHealth(cfg, stack.store, RollupReads(stack.db))
        deadline = time.monotonic() + 60
        while health.realtime_lag_s() > 0 and time.monotonic() < deadline:
            time.sleep(0.5)
        now = dt.datetime.now(dt.UTC)
        outcome = check_rule(rule, stack.measurer(now, cfg), now)
        assert outcome.action == "quiet", outcome
        pool.stop()
        stopped = time.monotonic()  # before the produce: no uncounted event is older than this
        produce(cfg, rt_topic, [gen.event(int(time.time() * 1000)) for _ in range(20)])
        produced_s = time.monotonic() - stopped  # the newest first event: this much after it
        starts: list[float] = []  # each check's start, in s after ``stopped``
        while time.monotonic() - stopped < threshold_s + produced_s + 4 * interval_s:
            starts.append(time.monotonic() - stopped)
            now = dt.datetime.now(dt.UTC)
            outcome = check_rule(rule, stack.measurer(now, cfg), now)
            if outcome.action == "opened":
                break
            time.sleep(interval_s)
        assert outcome.action == "opened", outcome
        # However long each check takes here: no check opened before the lag could reach the
        # threshold, and none that started once it surely had stayed quiet (the opening one
        # is the first such check or an earlier one), so it opened within one interval of it
        # (0.5 s: the clocks' and the reading's rounding).
        assert starts[-1] >= threshold_s - 0.5, starts
        assert all(start < threshold_s + produced_s + 0.5 for start in starts[:-1]), (starts, produced_s)
        assert Episode.objects.get(rule=rule).details["metric"] == "lag_s"
    finally:
        pool.stop()


def test_run_checks_checks_every_enabled_rule(db: None, stack: Stack) -> None:
    """The service skips disabled rules and reports an outcome per enabled one."""
    on = make_rule("drop", 0.5, window_minutes=60)
    off = make_rule("drop", 0.5, window_minutes=60)
    off.enabled = False
    off.save()
    load_usual_weeks(stack, on.site_id, 4, 100)
    outcomes = {o.rule_id: o.action for o in run_checks(NOW, stack.measurer(NOW))}
    assert outcomes.get(on.pk) == "opened"
    assert off.pk not in outcomes


def test_goal_conversions_below_a_level_open_then_resolve(db: None, stack: Stack) -> None:
    """A page goal with 2 conversions in its window is below 5; 10 more resolve it."""
    rule = make_rule("goal", 5.0, window_minutes=30)
    now = dt.datetime.now(dt.UTC)
    gen = DemoTraffic(site_id=rule.site_id, seed=11)

    def signups(n: int, offset_ms: int) -> list:
        return [msgspec.structs.replace(gen.event(ms(now) - offset_ms - i * 1000), path="/signup") for i in range(n)]

    stack.store.apply(signups(2, 60_000), ms(now))
    assert check_rule(rule, stack.measurer(now), now).action == "opened"
    assert Episode.objects.get(rule=rule).details["subject"] == "Signup"
    stack.store.apply(signups(10, 120_000), ms(now))
    assert check_rule(rule, stack.measurer(now), now).action == "resolved"


def test_a_failed_rollup_opens_at_once_and_a_late_one_after_its_hours(db: None, stack: Stack) -> None:
    """Yesterday's failed rollup holds whatever the hour; a missing one only past the threshold."""
    rule = make_rule("rollup", 6.0)
    yesterday = (NOW - dt.timedelta(days=1)).date().isoformat()
    early = NOW.replace(hour=3)
    assert check_rule(rule, stack.measurer(early), early).action == "quiet"  # 3 h after the day ended
    assert check_rule(rule, stack.measurer(NOW), NOW).action == "opened"  # 12 h: late
    assert Episode.objects.get(rule=rule).details["subject"] == yesterday
    empty = {"pageviews": 0, "visitors": 0, "sessions": 0, "bounces": 0, "visit_duration_s": 0.0}
    load_day(stack.db, DayDocuments(rule.site_id, yesterday, empty, [], [], {"status": "complete", "tz": "UTC"}))
    assert check_rule(rule, stack.measurer(NOW), NOW).action == "resolved"

    failed = make_rule("rollup", 6.0)
    load_day(stack.db, DayDocuments(failed.site_id, yesterday, empty, [], [], {"status": "failed", "tz": "UTC"}))
    assert check_rule(failed, stack.measurer(early), early).action == "opened"
    assert Episode.objects.get(rule=failed).details["summary"] == f"The nightly rollup of {yesterday} failed."


def test_drift_of_the_newest_reconciled_day(db: None, stack: Stack) -> None:
    rule = make_rule("drift", 2.0)
    record_reconciliation(stack.db, rule.site_id, "2026-11-21", {"pageviews_drift_pct": 9.0, "visitors_drift_pct": 1.0})
    record_reconciliation(
        stack.db, rule.site_id, "2026-11-22", {"pageviews_drift_pct": -3.5, "visitors_drift_pct": 1.0}
    )
    assert check_rule(rule, stack.measurer(NOW), NOW).action == "opened"
    episode = Episode.objects.get(rule=rule)
    assert episode.value == 3.5
    assert episode.details["subject"] == "2026-11-22"
    record_reconciliation(stack.db, rule.site_id, "2026-11-22", {"pageviews_drift_pct": 0.4, "visitors_drift_pct": 0.2})
    assert check_rule(rule, stack.measurer(NOW), NOW).action == "resolved"
