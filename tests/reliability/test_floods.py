"""Floods: a single client flooding the beacon gets 429 while other clients lose nothing; bodies
over 64 KiB get 413; the spool's size bound holds (503 beyond it) and loses nothing it accepted.

Requests go through Django's test client to the real collector views and ingestor, over the
stack's Kafka and Redis, with the configured flood limit (FOOTFALL_CLIENT_RATE/BURST). The
spool is filled by a collector whose broker is unreachable, over a small bound, then replayed
to the real broker.
"""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from django.test import Client

import collector.runtime
from collector.beacon import MAX_BODY_BYTES
from collector.ingest import Ingestor
from footfall.config import Config
from footfall.models import Site
from footfall_capture.events import decode
from footfall_capture.sink import KafkaSink
from footfall_capture.spool import Spool, _read_frames
from tests.integration.collector.conftest import site  # noqa: F401 - a fixture
from tests.integration.kafka_tail import TopicTail
from tests.reliability.conftest import Results, Row, size

FIREFOX = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"


@dataclass
class Tally:
    sent: int = 0
    lost: int = 0
    duplicated: int = 0
    errors_5xx: int = 0
    notes: list[str] = field(default_factory=list)


def beacon(client: Client, target: Site, ip: str, **fields: object):
    body = json.dumps({"site_id": target.site_id, **fields}).encode()
    return client.post("/collect", body, content_type="text/plain", REMOTE_ADDR=ip, HTTP_USER_AGENT=FIREFOX)


def flood_and_oversized(client: Client, target: Site, cfg: Config, tally: Tally) -> None:
    flood = size(600, 20_000)
    run = uuid.uuid4().int
    flooder = f"203.0.113.{run % 250 + 1}"
    # Many other clients, each sending a few beacons interleaved with the flood (under the limit).
    others = [f"198.51.{100 + (run + i) % 100}.{i % 250 + 1}" for i in range(size(60, 500))]
    tail = TopicTail(cfg, cfg.events_topic)
    statuses: dict[str, Counter[int]] = {"flooder": Counter(), "others": Counter()}
    ids: list[str] = []
    pixels = 0
    retry_after: list[int] = []

    def send(who: str, ip: str, i: int) -> None:
        nonlocal pixels
        url = f"https://example.com/flood/{i % 20}"
        if i % 3 == 0:  # the pixel shares the limit
            resp = client.get(
                "/p.gif", {"site_id": target.site_id, "url": url}, REMOTE_ADDR=ip, HTTP_USER_AGENT=FIREFOX
            )
        else:
            resp = beacon(client, target, ip, url=url)
        statuses[who][resp.status_code] += 1
        if resp.status_code == 202 and i % 3 == 0:
            pixels += 1
        elif resp.status_code == 202:
            ids.append(resp.json()["event_id"])
        elif resp.status_code == 429:
            retry_after.append(int(resp["Retry-After"]))

    flood_started = time.monotonic()
    for i in range(flood):
        send("flooder", flooder, i)
        if i % 5 == 0:
            send("others", others[(i // 5) % len(others)], i)
    flood_seconds = time.monotonic() - flood_started

    # Bodies over 64 KiB: 413 before the view reads them; exactly 64 KiB is read (and accepted).
    oversized: Counter[int] = Counter()
    for extra in (1, 1024, 1 << 20, 8 << 20):
        body = b'{"site_id": "%s", "type": "big", "props": {"k": "' % target.site_id.encode()
        body += b"v" * (MAX_BODY_BYTES + extra - len(body) - 3) + b'"}}'
        resp = client.post("/collect", body, content_type="text/plain", REMOTE_ADDR=others[0], HTTP_USER_AGENT=FIREFOX)
        oversized[resp.status_code] += 1
        assert resp.status_code == 413, (extra, resp.status_code)
        assert resp.json()["error"] == "body_too_large"
    at_limit = b'{"site_id": "%s", "type": "edge", "url": "https://example.com/"}' % target.site_id.encode()
    at_limit += b" " * (MAX_BODY_BYTES - len(at_limit))
    edge = client.post("/collect", at_limit, content_type="text/plain", REMOTE_ADDR=others[1], HTTP_USER_AGENT=FIREFOX)
    assert edge.status_code == 202, edge.content
    ids.append(edge.json()["event_id"])

    # Every accepted beacon reaches the log once (pixels are counted: their ids are not answered).
    msgs = tail.read(lambda m: decode(m.value()).site_id == target.site_id, len(ids) + pixels, timeout=60, settle=2.0)
    tail.close()
    seen = Counter(decode(m.value()).event_id for m in msgs)
    missing = set(ids) - set(seen)
    tally.sent += flood + statuses["others"].total() + 5
    tally.lost += max(len(missing), len(ids) + pixels - len(seen))
    tally.duplicated += sum(1 for c in seen.values() if c > 1)
    tally.errors_5xx += sum(n for who in statuses for code, n in statuses[who].items() if code >= 500)
    tally.notes.append(
        f"flood of {flood} in {flood_seconds:.0f}s: flooder {dict(statuses['flooder'])}, "
        f"{len(others)} others {dict(statuses['others'])}; >64 KiB {dict(oversized)}"
    )

    assert statuses["others"] == {202: statuses["others"].total()}, statuses["others"]
    assert set(statuses["flooder"]) == {202, 429}, statuses["flooder"]
    flooder_limit = cfg.client_burst + cfg.client_rate * flood_seconds + 1
    assert cfg.client_burst <= statuses["flooder"][202] <= flooder_limit, (statuses["flooder"], flooder_limit)
    assert min(retry_after) >= 1
    assert not missing, f"{len(missing)} accepted events never reached Kafka"
    assert len(msgs) == len(seen) == len(ids) + pixels


@pytest.fixture
def down_sink(cfg: Config, tmp_path: Path) -> Iterator[KafkaSink]:
    """A sink whose broker is unreachable (and which knows it) over a small spool."""
    sink = KafkaSink(
        cfg.kafka, Spool(tmp_path / "spool", size(64 << 10, 1 << 20)), **{"bootstrap.servers": "127.0.0.1:9"}
    )
    sink._get_producer()
    deadline = time.monotonic() + 30
    while not sink.kafka_down:  # it spools at once, as a process that saw the broker go does
        assert time.monotonic() < deadline, "the sink never noticed the unreachable broker"
        time.sleep(0.05)
    yield sink
    sink.close()


def fill_spool(client: Client, target: Site, cfg: Config, sink: KafkaSink, tally: Tally) -> None:
    spool = sink.spool
    statuses: Counter[int] = Counter()
    accepted: list[str] = []
    i = 0
    while statuses[503] < 50:  # well past the bound
        resp = beacon(client, target, f"192.0.2.{i % 200 + 1}", url=f"https://example.com/out/{i}", title="x" * 200)
        statuses[resp.status_code] += 1
        if resp.status_code == 202:
            assert resp.json()["status"] == "spooled", resp.json()
            assert statuses[503] == 0, "an event was accepted after the spool had refused one"
            accepted.append(resp.json()["event_id"])
        else:
            assert resp.status_code == 503, resp.content
            assert resp.json()["error"] == "unavailable"
        i += 1
    on_disk = sum(p.stat().st_size for p in spool.directory.glob("*.spool"))
    frames = [f for p in sorted(spool.directory.glob("*.spool")) for f in _read_frames(p)[0]]
    spooled = Counter(decode(f).event_id for f in frames)

    # The broker is back (a sink over the real one): the spool replays, and there is room again.
    tail = TopicTail(cfg, cfg.events_topic)
    spool.close()
    delivered = KafkaSink(cfg.kafka, Spool(spool.directory, spool.max_bytes)).replay()
    msgs = tail.read(lambda m: decode(m.value()).site_id == target.site_id, len(accepted), timeout=60, settle=2.0)
    tail.close()
    arrived = Counter(decode(m.value()).event_id for m in msgs)
    tally.sent += i
    tally.lost += len(set(accepted) - set(arrived))
    tally.duplicated += sum(1 for c in arrived.values() if c > 1)
    tally.notes.append(
        f"spool bound {spool.max_bytes} B, broker unreachable: {dict(statuses)} ({on_disk} B on disk), "
        f"replayed {delivered}"
    )

    assert statuses[202] > 0
    assert on_disk <= spool.max_bytes, (on_disk, spool.max_bytes)
    assert set(spooled) == set(accepted), "the spool holds other than the accepted events"
    assert max(spooled.values()) == 1
    assert sink.stats["lost"] == 0
    assert delivered == len(accepted)
    assert set(arrived) == set(accepted), f"{len(set(accepted) - set(arrived))} accepted events lost"
    assert max(arrived.values()) == 1
    assert spool.pending() == 0
    time.sleep(1.1)  # the spool re-measures itself at most once a second
    assert beacon(client, target, "192.0.2.250", url="https://example.com/after").status_code == 202


def test_flood_gets_429_others_lose_nothing_big_bodies_413_spool_bound_holds(
    client: Client,
    site: Site,  # noqa: F811 - the imported fixture
    cfg: Config,
    down_sink: KafkaSink,
    monkeypatch: pytest.MonkeyPatch,
    results: Results,
) -> None:
    started = time.monotonic()
    tally = Tally()
    try:
        flood_and_oversized(client, site, cfg, tally)
        monkeypatch.setattr(collector.runtime, "_ingestor", Ingestor(cfg, down_sink))
        fill_spool(client, site, cfg, down_sink, tally)
    except BaseException as exc:
        tally.notes.append(f"FAILED: {type(exc).__name__}: {str(exc)[:200]}")
        raise
    finally:
        results.record(
            Row(
                scenario="floods",
                load=f"{tally.sent} requests from one flooding client, many others, oversized bodies",
                faults="flood, bodies over 64 KiB, broker unreachable until the spool is full",
                sent=tally.sent,
                lost=tally.lost,
                duplicated=tally.duplicated,
                errors_5xx=tally.errors_5xx,  # the 503s beyond the spool's bound are the specified answer
                notes="; ".join(tally.notes) or "failed before any figure",
            ),
            started,
        )
