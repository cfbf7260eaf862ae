"""Events → Kafka → archive → Spark rollup → Mongo, checked against an exact truth.

A job killed once it has loaded its first day is re-run on a local Spark standalone cluster,
whose documents must equal the truth (a re-run, a crash repair and the cluster's figures in
one run); MongoDB's URL is on no process's command line.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import random
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from zoneinfo import ZoneInfo

import msgspec
import pymongo
import pytest
from pymongo.database import Database

from archive.archiver import build_archiver
from archive.spark_conf import SMALL_JVM_OPTIONS
from archive.store import Archive, read_event_ids
from footfall.config import Config
from footfall.demo import DemoTraffic
from footfall.goals import GoalSpec
from footfall.models import Site
from footfall.vocabulary import MAX_ENGAGED_MS
from footfall_capture.events import Event, UserAgent
from historical.progress import ProgressFile
from historical.rollups import REPO, definitions_file, run_rollup, spark_submit_command, spark_submit_env
from historical.store import BREAKDOWNS, DAILY
from tests.integration.batch.command_lines import watched_command_lines
from tests.integration.batch.truth import conversions, exact
from tests.integration.kafka_tail import produce

TZ = "Europe/Berlin"
GOALS = [
    GoalSpec("1", "page", name="Docs", path="/docs/*"),
    GoalSpec("2", "event", name="Pro signup", event="signup", prop="plan", value="pro"),
    GoalSpec("3", "event", name="Plan 3", event="signup", prop="plan", value="3"),
]


def two_days_of_traffic(site: str) -> tuple[list[Event], list[str]]:
    """Two local days (the day before yesterday and yesterday in Berlin) of page views, with
    5 % duplicates, some bots, custom events with properties, engagement reports (some over the
    cap, some negative) and late events (received a day later)."""
    today = dt.datetime.now(ZoneInfo(TZ)).date()
    days = [(today - dt.timedelta(days=n)).isoformat() for n in (2, 1)]
    start = int(dt.datetime.combine(today - dt.timedelta(days=2), dt.time(), ZoneInfo(TZ)).timestamp() * 1000)
    gen = DemoTraffic(site_id=site, visitors=60, seed=21)
    rng = random.Random(5)
    events = []
    for i in range(3000):
        ts = start + int(i * 2 * 86_400_000 / 3000) + rng.randrange(60_000)
        event = gen.event(ts, received_at_ms=ts + rng.randrange(2000))
        if i % 37 == 0:
            event = msgspec.structs.replace(event, ua=UserAgent(browser="Googlebot", device="bot", is_bot=True))
        if i % 53 == 0:
            plan = "pro" if i % 2 else rng.choice(["free", "team", 3.0])
            event = msgspec.structs.replace(event, type="signup", url=None, path=None, props={"plan": plan})
        elif i % 7 == 0:
            engaged = rng.choice([rng.randrange(1000, 120_000), 2 * MAX_ENGAGED_MS, -5])
            props = {"engaged_ms": engaged, "scroll_depth": rng.randrange(101), "pageview_id": f"pv-{i % 350}"}
            event = msgspec.structs.replace(event, type="engagement", props=props)
        if i % 41 == 0:
            event = msgspec.structs.replace(event, received_at=ts + 86_400_000)  # a straggler
        events.append(event)
    events += rng.sample(events, 150)
    rng.shuffle(events)
    return events, days


def archive_topic(cfg: Config, topic: str, expected: int) -> None:
    processor, factory = build_archiver(cfg, f"arch-{topic}", topic, max_batch_size=2000, max_batch_time=1.0)
    thread = threading.Thread(target=processor.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while factory.stats["archived"] < expected and time.monotonic() < deadline:
        time.sleep(0.3)
    processor.signal_shutdown()
    thread.join(30)
    assert factory.stats["archived"] >= expected


def assert_matches_truth(
    cfg: Config, site: str, events: list[Event], days: list[str], goals: Sequence[GoalSpec] = ()
) -> None:
    """The rollup of ``days`` equals the truth of ``events``; ``goals``: those it was given."""
    truth = exact(events, TZ, set(days))
    client: pymongo.MongoClient = pymongo.MongoClient(cfg.mongo_url)
    db = client[cfg.mongo_db]
    for day in days:
        doc = db[DAILY].find_one({"_id": f"{site}|{day}"})
        want = truth[day]
        got = {k: doc[k] for k in ("pageviews", "visitors", "sessions", "bounces", "bounce_rate", "visit_duration_s")}
        assert got == {k: want[k] for k in got}, day
        assert doc["bot_events"] == want["bot_events"]
        pages = {
            d["value"]: d["pageviews"] for d in db[BREAKDOWNS].find({"site_id": site, "day": day, "dimension": "page"})
        }
        assert pages == dict(want["pages"])
        refs = {
            d["value"]: d["pageviews"] for d in db[BREAKDOWNS].find({"site_id": site, "day": day, "dimension": "ref"})
        }
        assert refs == dict(want["refs"])
        run = db["batch_runs"].find_one({"_id": f"{site}|{day}"})
        assert run["status"] == "complete"
    assert_conversions_match_truth(db, site, events, days, goals)
    client.close()


def assert_conversions_match_truth(
    db: Database, site: str, events: list[Event], days: list[str], goals: Sequence[GoalSpec]
) -> None:
    """Custom events, goals and engaged time as the contract defines them, exactly."""
    truth = conversions(events, TZ, set(days), goals)
    for day in days:
        want = truth[day]
        doc = db[DAILY].find_one({"_id": f"{site}|{day}"})
        assert (doc["engaged_ms"], doc["engagements"]) == (want["engaged_ms"], want["engagements"]), day
        assert want["engagements"] > 0
        assert doc["custom_events"] == sum(n for n, _ in want["events"].values())

        def rows(dimension: str, fields: tuple[str, ...], day: str = day) -> dict[str, tuple]:
            found = db[BREAKDOWNS].find({"site_id": site, "day": day, "dimension": dimension})
            return {d["value"]: tuple(d[f] for f in fields) for d in found}

        assert rows("event", ("events", "visitors")) == want["events"]
        assert rows("goal", ("events", "visitors")) == want["goals"]
        assert all(n > 0 for n, _ in want["goals"].values()), want["goals"]  # the traffic reaches each
        pages = rows("page", ("engaged_ms",))
        assert {p: ms for p, (ms,) in pages.items() if ms} == {p: ms for p, ms in want["page_engaged_ms"].items() if ms}
        plans = rows("event_prop", ("prop_value", "events"))
        assert sum(n for _, n in plans.values()) == want["events"]["signup"][0]
        assert "3" in {value for value, _ in plans.values()}


@pytest.mark.django_db
def test_end_to_end_exact_idempotent_and_crash_safe(batch_cfg: Config, rt_topic: str, spark_cluster: str) -> None:
    site = f"b-{uuid.uuid4().hex[:8]}"
    Site.objects.create(site_id=site, name="Batch", domains=["demo.footfall.local"], timezone=TZ)
    events, days = two_days_of_traffic(site)
    produce(batch_cfg, rt_topic, events)
    archive_topic(batch_cfg, rt_topic, len(events))
    assert sorted(read_event_ids(Archive(batch_cfg.archive_url))) == sorted(e.event_id for e in events)

    first, last = dt.date.fromisoformat(days[0]), dt.date.fromisoformat(days[1])
    goals = {site: GOALS}
    client: pymongo.MongoClient = pymongo.MongoClient(batch_cfg.mongo_url)
    db = client[batch_cfg.mongo_db]
    # A stale document of the second day, as an earlier night's run could have left it.
    stale = {"_id": f"{site}|{days[1]}|page|/stale", "site_id": site, "day": days[1], "dimension": "page"}
    db[BREAKDOWNS].insert_one({**stale, "value": "/stale", "pageviews": 99})

    # A local job killed with SIGKILL as soon as it has loaded its first day ...
    with definitions_file(goals) as goals_path, tempfile.TemporaryDirectory() as tmp:
        progress_path = Path(tmp) / "progress.jsonl"
        command = spark_submit_command(
            batch_cfg, "local[2]", first, last, {site: TZ},
            goals_path=goals_path, progress_path=progress_path, jvm=SMALL_JVM_OPTIONS,
        )  # fmt: skip
        proc = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, env=spark_submit_env(batch_cfg), cwd=REPO, start_new_session=True
        )
        progress = ProgressFile(progress_path)
        while not progress.new_days():
            assert proc.poll() is None, f"the job ended (exit {proc.returncode}) before loading a day"
            time.sleep(0.1)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    assert db[DAILY].find_one({"_id": f"{site}|{days[0]}"}) is not None

    # ... then re-run on the local standalone cluster: the re-run replaces what the killed run
    # and the earlier night left, so figures equal to the truth prove a plain re-run, a crash
    # repair and the cluster's figures at once (a kill mid-write: tests/reliability).
    # MongoDB's URL reaches the job through its environment only: an option the Mongo-wire
    # server ignores stands for a password, and no process of the job shows it (ps, /proc).
    secret = f"s3cret-{uuid.uuid4().hex}"
    secret_cfg = dataclasses.replace(batch_cfg, mongo_url=f"{batch_cfg.mongo_url.rstrip('/')}/?appname={secret}")
    assert not any(secret in arg for arg in spark_submit_command(secret_cfg, spark_cluster, first, last, {site: TZ}))
    with watched_command_lines("spark_jobs/rollup.py") as seen:
        result = run_rollup(secret_cfg, first, last, [site], master=spark_cluster, goals=goals)
    assert seen, "no process of the job was seen running"
    assert not [line for line in seen if secret in line]
    # The job's JVMs run with the compiler options of a small input (archive.spark_conf).
    assert [line for line in seen if " org.apache.spark.deploy.SparkSubmit " in line and SMALL_JVM_OPTIONS in line]
    assert sorted(result.days) == [(site, d) for d in days]
    assert db[BREAKDOWNS].find_one({"_id": stale["_id"]}) is None, "the stale document outlived the re-run"
    assert_matches_truth(batch_cfg, site, events, days, GOALS)
    client.close()
