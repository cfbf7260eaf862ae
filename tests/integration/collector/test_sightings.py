"""The installation check's record on a real Redis: first and last events, refusals kept newest
first and capped, writes spaced out per site, and a Redis that does not answer fails nothing."""

from __future__ import annotations

import time
import uuid

import pytest

from collector.sightings import KEEP_REFUSED, SEEN_EVERY_S, Sightings, Unreadable
from footfall.config import Config
from tests.ports import free_port


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def test_first_and_last_events_and_refusals(cfg: Config) -> None:
    clock, site = Clock(), f"seen-{uuid.uuid4().hex[:8]}"
    record = Sightings.at(cfg.redis_url, timeout_s=1.0)
    record.clock = clock
    assert record.read(site).first is None
    record.seen(site, "tracker", "https://example.com/")
    clock.now += 1
    record.seen(site, "tracker", "https://www.example.com/")  # within SEEN_EVERY_S of the last write: not written
    clock.now += SEEN_EVERY_S
    record.seen(site, "middleware", "https://app.example.com/a?b=c")
    seen = record.read(site)
    assert (seen.first.source, seen.first.host, seen.first.at_ms) == ("tracker", "example.com", 1_800_000_000_000)
    assert (seen.last.source, seen.last.host) == ("middleware", "app.example.com")

    for n in range(KEEP_REFUSED + 5):
        clock.now += 1.5
        record.refused(site, "tracker", "page_host_not_allowed", f"refusal {n}", "https://copycat.example.net/x")
        record.refused(site, "tracker", "page_host_not_allowed", "the same second: not written", None)
    refused = record.read(site).refused
    assert len(refused) == KEEP_REFUSED
    assert refused[0].detail == f"refusal {KEEP_REFUSED + 4}"  # newest first
    assert {r.reason for r in refused} == {"page_host_not_allowed"}


def test_a_redis_that_does_not_answer_fails_no_beacon() -> None:
    record = Sightings.at(f"redis://127.0.0.1:{free_port()}/0", timeout_s=0.2)  # nothing listens there
    started = time.monotonic()
    record.seen("any-site", "tracker", "https://example.com/")
    record.refused("any-site", "pixel", "bot", "taken, then dropped", None)
    assert time.monotonic() - started < 1.0
    with pytest.raises(Unreadable, match="cannot be read right now"):
        record.read("any-site")
