"""Kafka outage at the collector: 5,000 beacons while the broker is down, none lost, none doubled.

Stops the stack's real broker, sends beacons through the real endpoint, checks every 202
was queued or spooled (and that the spool holds no IP address), starts the broker again,
and reads the topic: each accepted event id arrives exactly once after the automatic replay.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.test import Client

import collector.runtime
from collector.ingest import Ingestor
from footfall.config import Config
from footfall.models import Site
from footfall_capture.events import decode
from footfall_capture.sink import KafkaSink
from footfall_capture.spool import Spool
from tests.integration.kafka_tail import TopicTail

BEACONS = 5_000
FIREFOX = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
REPO = Path(__file__).resolve().parents[3]


def stack(*args: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "deploy.local.stack", *args], check=True, cwd=REPO, env=os.environ, timeout=300
    )


@pytest.fixture
def outage_sink(cfg: Config, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[KafkaSink]:
    """The collector's ingestor with its own sink and spool, so the test sees exactly its events."""
    sink = KafkaSink(cfg.kafka, Spool(tmp_path / "spool", 256 << 20), **{"message.timeout.ms": 5000})
    monkeypatch.setattr(collector.runtime, "_ingestor", Ingestor(cfg, sink))
    yield sink
    sink.close()


def ip_of(i: int) -> str:
    return f"198.51.{100 + i // 250}.{i % 250 + 1}"  # many clients, each under the flood limit


def test_no_loss_no_duplicates_across_a_broker_outage(
    client: Client, site: Site, cfg: Config, outage_sink: KafkaSink
) -> None:
    tail = TopicTail(cfg, cfg.events_topic)
    accepted: list[str] = []
    statuses: Counter[int] = Counter()

    def send(i: int) -> None:
        body = b'{"site_id": "%s", "url": "https://example.com/p/%d"}' % (site.site_id.encode(), i % 50)
        resp = client.post("/collect", body, content_type="text/plain", REMOTE_ADDR=ip_of(i), HTTP_USER_AGENT=FIREFOX)
        statuses[resp.status_code] += 1
        if resp.status_code == 202:
            assert resp.json()["status"] in {"queued", "spooled"}
            accepted.append(resp.json()["event_id"])

    send(0)  # the producer is connected before the broker goes away
    stack("stop", "kafka")
    try:
        for i in range(1, BEACONS):
            send(i)
        assert statuses == {202: BEACONS}, statuses
        # Whatever sat in the producer's queue fails delivery after message.timeout.ms and is spooled.
        producer = outage_sink._get_producer()
        deadline = time.monotonic() + 60
        while len(producer) and time.monotonic() < deadline:
            time.sleep(0.2)
        spooled = outage_sink.spool.pending()
        assert spooled >= BEACONS - 100, (spooled, dict(outage_sink.stats))
        raw = b"".join(p.read_bytes() for p in outage_sink.spool.directory.glob("*.spool"))
        assert not [ip_of(i) for i in range(BEACONS) if ip_of(i).encode() in raw]
    finally:
        stack("start", "kafka")

    deadline = time.monotonic() + 120
    while outage_sink.spool.pending() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert outage_sink.spool.pending() == 0, dict(outage_sink.stats)
    outage_sink.flush(30)

    msgs = tail.read(lambda m: decode(m.value()).site_id == site.site_id, len(accepted), timeout=60, settle=3.0)
    tail.close()
    counts = Counter(decode(m.value()).event_id for m in msgs)
    assert set(counts) == set(accepted), f"missing {len(set(accepted) - set(counts))}"
    assert max(counts.values()) == 1, f"duplicated {sum(1 for c in counts.values() if c > 1)}"
    assert outage_sink.stats["lost"] == 0
