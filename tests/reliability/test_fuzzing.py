"""Fuzzing: schemathesis against the OpenAPI schema; Hypothesis against the event decoder, the
enrichment pipeline and the beacon endpoints (POST /collect, GET /p.gif). At full size at least
10,000 cases each: no 5xx, no uncaught exception, and invalid events only ever in the invalid
topic.

"Invalid events only in the invalid topic" is checked on both paths onto the log: every event the
fuzzed collector put on its (test) events topic decodes as valid, everything it put on the
invalid topic does not; and the fuzzed raw payloads of the decoder phase are produced to that
events topic and consumed by a realtime worker (``realtime.consumer.build_processor``, whose
dead-letter topic is ``invalid_topic`` of its configuration): every invalid payload, and only
those, lands in the invalid topic with a reason, and none of them left a dedup mark, i.e. none was
counted.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import os
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
import redis
import schemathesis
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import collector.runtime
from collector.ingest import Ingestor
from footfall.config import Config
from footfall.demo import DemoTraffic
from footfall.models import Site
from footfall_capture.enrich.pipeline import Drop, SiteContext, enrich
from footfall_capture.enrich.steps import DEFAULT_STEPS
from footfall_capture.events import INVALID_REASONS, MAX_EVENT_BYTES, Event, InvalidEvent, decode, encode, to_builtins
from footfall_capture.kafka import producer_config
from footfall_capture.sink import KafkaSink
from footfall_capture.spool import Spool
from footfall_server.wsgi import application
from realtime.consumer import MAX_FUTURE_SKEW_MS, build_processor
from realtime.keys import KeyLayout
from realtime.store import CounterStore
from tests.integration.api.conftest import SiteKey, site_key  # noqa: F401 - a fixture
from tests.integration.api.test_schemathesis import CHECKS
from tests.integration.conftest import kafka_admin, rt_topic  # noqa: F401 - fixtures
from tests.integration.kafka_tail import TopicTail
from tests.integration.realtime.conftest import wait_consumed
from tests.integration.realtime.test_exactly_once import end_offsets
from tests.reliability.conftest import Results, Row, size
from tests.unit.enrich.drafts import CHROME_WINDOWS, GOOGLEBOT, PUBLIC_IP, SALT, make_draft

CASES = size(200, 10_000)  # per target
NOW = int(time.time() * 1000)
SETTINGS = settings(max_examples=CASES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
EVENT_FIELDS = [f for f in Event.__struct_fields__]
BEACON_FIELDS = ["site_id", "type", "url", "referrer", "title", "event_id", "props", "ts", "ip", "user_agent"]
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)
TEXT = st.text(max_size=300) | st.text(alphabet=st.characters(codec="ascii"), max_size=3000)
URLS = st.one_of(
    TEXT,
    st.builds(lambda host, path, q: f"https://{host}/{path}?{q}", TEXT, TEXT, TEXT),
    st.sampled_from(["https://example.com/", "http://[::1]:99999/", "javascript:alert(1)", "https://xn--/..", "//x"]),
)


@dataclasses.dataclass
class Tally:
    cases: Counter = dataclasses.field(default_factory=Counter)
    statuses: Counter = dataclasses.field(default_factory=Counter)
    notes: list[str] = dataclasses.field(default_factory=list)


# --- the event decoder ----------------------------------------------------------------------------
@st.composite
def raw_payloads(draw: st.DrawFn, site: str) -> bytes:
    """What may reach the events topic: valid events, each mutated in one way (or not at all)."""
    now = NOW  # fixed: generated data must not depend on the clock (Hypothesis replays cases)
    event = DemoTraffic(site_id=site, visitors=50, seed=draw(st.integers(0, 1000))).event(now - 60_000)
    doc = to_builtins(msgspec.structs.replace(event, event_id=str(uuid.uuid4())))
    kind = draw(st.sampled_from(["none", "set", "drop", "extra", "schema", "ts", "nested", "bytes", "cut", "huge"]))
    if kind == "set":
        doc[draw(st.sampled_from(EVENT_FIELDS))] = draw(JSON_VALUES)
    elif kind == "drop":
        doc.pop(draw(st.sampled_from(EVENT_FIELDS)), None)
    elif kind == "extra":
        doc[draw(st.text(max_size=20))] = draw(JSON_VALUES)
    elif kind == "schema":
        doc["schema"] = draw(st.integers() | st.sampled_from([0, 2, "1", 1.0]))
    elif kind == "ts":
        doc[draw(st.sampled_from(["ts", "received_at"]))] = draw(
            st.integers(now + 3_600_000, 5_000_000_000_000) | st.integers(0, 946_684_800_000) | st.integers()
        )
    elif kind == "nested":
        doc[draw(st.sampled_from(["ua", "utm", "props"]))] = draw(st.dictionaries(st.text(max_size=70), JSON_VALUES))
    elif kind == "bytes":
        return draw(st.binary(max_size=300))
    elif kind == "huge":
        doc["title"] = None
        doc["props"] = {"k": "x" * draw(st.integers(MAX_EVENT_BYTES - 600, MAX_EVENT_BYTES + 600))}
    data = json.dumps(doc, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")
    return data[: draw(st.integers(0, len(data)))] if kind == "cut" else data


def classify(payload: bytes, now_ms: int) -> str | None:
    """The realtime worker's verdict: None (valid), a reason, or "borderline" (too near the skew limit)."""
    try:
        event = decode(payload)
    except InvalidEvent as exc:
        return exc.reason
    limit = now_ms + MAX_FUTURE_SKEW_MS
    if abs(event.ts - limit) < 120_000:
        return "borderline"
    return "future_event" if event.ts > limit else None


def fuzz_decoder(site: str, tally: Tally) -> list[bytes]:
    """Decode fuzzed payloads: an event or InvalidEvent with a known reason, never anything else;
    a decoded event encodes and decodes to itself. Returns the payloads."""
    payloads: list[bytes] = []

    @given(payload=raw_payloads(site))
    @SETTINGS
    def run(payload: bytes) -> None:
        tally.cases["decoder"] += 1
        payloads.append(payload)
        try:
            event: Event | None = decode(payload)
        except InvalidEvent as exc:
            event, reason = None, exc.reason
        if event is None:
            assert reason in INVALID_REASONS, reason
            tally.statuses[f"decoder:{reason}"] += 1
            return
        tally.statuses["decoder:valid"] += 1
        assert decode(encode(event)) == event

    run()
    return payloads


# --- enrichment ---------------------------------------------------------------------------------
PROP_VALUES = st.none() | st.text(max_size=600) | st.integers() | st.floats() | st.booleans()
IPS = st.one_of(
    st.ip_addresses().map(str), st.text(max_size=64), st.sampled_from([PUBLIC_IP, "", " 1.2.3.4 ", "::ffff:1.2.3.4"])
)


def fuzz_enrichment(tally: Tally) -> None:
    """Any draft the HTTP boundary can build (and more): an event that encodes (or a clear
    InvalidEvent, which the collector answers 400) or a Drop; never another exception."""

    @given(
        url=st.none() | URLS,
        referrer=st.none() | URLS,
        title=st.none() | st.text(max_size=600),
        ip=st.none() | IPS,
        user_agent=st.one_of(st.text(max_size=2048), st.sampled_from([CHROME_WINDOWS, GOOGLEBOT, ""])),
        props=st.none() | st.dictionaries(st.text(min_size=1, max_size=64), PROP_VALUES, max_size=40),
        event_type=st.sampled_from(["pageview", "signup", "request"]),
        dnt=st.booleans(),
        domains=st.lists(st.text(max_size=30), max_size=3).map(tuple),
        respect_dnt=st.booleans(),
        drop_bots=st.booleans(),
    )
    @SETTINGS
    def run(**kw: object) -> None:
        tally.cases["enrichment"] += 1
        fields = ("url", "referrer", "title", "ip", "user_agent", "props", "dnt")
        draft = make_draft(**{name: kw[name] for name in fields}, type=kw["event_type"])
        ctx = SiteContext(site_id="shop", domains=kw["domains"], respect_dnt=kw["respect_dnt"],
                          drop_bots=kw["drop_bots"], salt=SALT)  # fmt: skip
        try:
            decode(encode(enrich(draft, ctx, DEFAULT_STEPS)))
        except Drop as drop:  # dropped before the last step: the draft (and its IP) is discarded
            tally.statuses[f"enrichment:drop:{drop.reason.value}"] += 1
            return
        except InvalidEvent as exc:  # the collector answers 400 with the reason
            tally.statuses[f"enrichment:invalid:{exc.reason}"] += 1
        else:
            tally.statuses["enrichment:event"] += 1
        assert (draft.ip, draft.user_agent) == (None, ""), "the IP outlived enrichment"

    run()


# --- the beacon endpoints ------------------------------------------------------------------------
@st.composite
def beacon_requests(draw: st.DrawFn, site: str) -> dict[str, object]:
    doc: dict[str, object] = {"site_id": site, "url": "https://example.com/fuzz", "title": "t", "type": "pageview"}
    for _ in range(draw(st.integers(0, 3))):
        action = draw(st.sampled_from(["set", "text", "drop", "extra"]))
        name = draw(st.sampled_from(BEACON_FIELDS))
        if action == "set":
            doc[name] = draw(JSON_VALUES)
        elif action == "text":
            doc[name] = draw(URLS if name in ("url", "referrer") else TEXT)
        elif action == "drop":
            doc.pop(name, None)
        else:
            doc[draw(st.text(max_size=20))] = draw(JSON_VALUES)
    kind = draw(st.sampled_from(["json", "json", "json", "bytes", "pixel", "pixel"]))
    if kind == "pixel":
        query = {text(k): text(v if isinstance(v, str) else json.dumps(v)) for k, v in doc.items()}
        extra = draw(st.dictionaries(st.text(max_size=12), st.text(max_size=200), max_size=3))
        return {"method": "get", "query": {text(k): text(v) for k, v in extra.items()} | query}
    body = draw(st.binary(max_size=2000)) if kind == "bytes" else json.dumps(doc).encode("utf-8", "surrogatepass")
    content_type = draw(st.sampled_from(["text/plain", "application/json", "application/x-www-form-urlencoded", ""]))
    return {"method": "post", "body": body, "content_type": content_type}


def text(value: str) -> str:
    """As a URL carries it: lone surrogates cannot be sent (the test client would fail, not the view)."""
    return value.encode("utf-8", "replace").decode()


# Header values as a WSGI server hands them over: latin-1 text.
LATIN1 = st.characters(codec="latin-1")
HEADERS = st.fixed_dictionaries(
    {},
    optional={
        "HTTP_USER_AGENT": st.text(LATIN1, max_size=3000) | st.sampled_from([CHROME_WINDOWS, GOOGLEBOT]),
        "HTTP_X_FORWARDED_FOR": st.text(LATIN1, max_size=200),
        "HTTP_DNT": st.sampled_from(["1", "0", "yes"]),
        "HTTP_SEC_GPC": st.sampled_from(["1", "0"]),
        "HTTP_ORIGIN": st.sampled_from(["https://example.com", "https://evil.test", "null"])
        | st.text(LATIN1, max_size=50),
        "REMOTE_ADDR": st.text(LATIN1, max_size=60),
    },
)


def fuzz_beacons(client: Client, site: str, tally: Tally) -> None:
    addresses = itertools.count(1)
    # A page view whose URL canonicalization rejects (not http(s)) is a 400, not a 500: found by
    # this fuzzing (collector/enrich/pipeline.py, collector/ingest.py).
    for url in ("javascript:alert(1)", "https://", " "):
        body = json.dumps({"site_id": site, "url": url}).encode()
        resp = client.post("/collect", body, content_type="text/plain", REMOTE_ADDR="10.255.0.1")
        assert resp.status_code == 400, (url, resp.status_code)
        assert resp.json()["error"] == "invalid_field"

    @given(request=beacon_requests(site), headers=HEADERS)
    @SETTINGS
    def run(request: dict[str, object], headers: dict[str, str]) -> None:
        tally.cases["beacon"] += 1
        n = next(addresses)  # a fresh client address per case, so the flood limit rarely answers
        meta = {"REMOTE_ADDR": f"10.{n >> 16 & 255}.{n >> 8 & 255}.{n & 255}", **headers}
        if request["method"] == "get":
            resp = client.get("/p.gif", request["query"], **meta)
        else:
            resp = client.generic("POST", "/collect", request["body"], request["content_type"], **meta)
        tally.statuses[f"{request['method']}:{resp.status_code}"] += 1
        assert resp.status_code in (202, 400, 403, 413, 429), (request, headers, resp.status_code, resp.content)

    run()


# --- the API ------------------------------------------------------------------------------------
def fuzz_api(key: SiteKey, tally: Tally) -> None:
    schema = schemathesis.openapi.from_wsgi("/api/v1/schema?format=json", application)
    operations = [result.ok() for result in schema.get_all_operations()]
    per_operation = max(int(os.environ.get("FOOTFALL_FUZZ_EXAMPLES") or 0), math.ceil(CASES / len(operations)))
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(SETTINGS, max_examples=per_operation)
        def run(case: schemathesis.Case) -> None:
            tally.cases["api"] += 1
            params = case.path_parameters or {}
            if "site_id" in params and not params["site_id"].startswith("x"):
                params["site_id"] = key.site.site_id  # mostly the key's own site, so queries reach the stores
            response = case.call_and_validate(headers={"Authorization": f"Bearer {key.key}"}, checks=CHECKS)
            tally.statuses[f"api:{response.status_code}"] += 1

        run()
    tally.notes.append(f"{len(operations)} API operations x up to {per_operation} examples")
    # URLs that match no route (a segment with an encoded slash or a newline) get the documented
    # JSON 404, not Django's HTML page (found by this fuzzing; api/urls.py).
    for path in (f"sites/{key.site.site_id}/breakdown/a%2Fb", f"sites/{key.site.site_id}/pages/a%0Ab/referrers", "x"):
        resp = Client().get(f"/api/v1/{path}", HTTP_AUTHORIZATION=f"Bearer {key.key}")
        assert resp.status_code == 404, path
        assert resp["Content-Type"] == "application/json", path
        assert set(resp.json()["error"]) == {"parameter", "message"}


# --- fixtures -------------------------------------------------------------------------------------
@pytest.fixture
def invalid_topic(kafka_admin: AdminClient) -> Iterator[str]:  # noqa: F811
    name = f"inv-{uuid.uuid4().hex[:10]}"
    kafka_admin.create_topics([NewTopic(name, num_partitions=3, replication_factor=1)])[name].result(timeout=30)
    yield name
    kafka_admin.delete_topics([name])[name].result(timeout=30)


def produce_raw(cfg: Config, topic: str, payloads: list[bytes], sentinels: list[bytes]) -> None:
    producer = Producer(producer_config(cfg.kafka))
    for payload in payloads:
        producer.produce(topic, payload)
        producer.poll(0)
    partitions = producer.list_topics(topic, timeout=10).topics[topic].partitions
    for partition, sentinel in zip(sorted(partitions), sentinels, strict=False):
        producer.produce(topic, sentinel, partition=partition)  # a valid last message on every partition
    assert producer.flush(60) == 0


# Committed rows: the WSGI application closes the test's connection after each request.
@pytest.mark.django_db(transaction=True)
def test_fuzzing_api_decoder_enrichment_beacons_invalid_only_in_invalid_topic(
    cfg: Config,
    site_key: SiteKey,  # noqa: F811 - imported fixtures
    rt_topic: str,  # noqa: F811
    invalid_topic: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    results: Results,
) -> None:
    started = time.monotonic()
    tally = Tally()
    monkeypatch.setattr("api.auth.footfall_config", lambda: dataclasses.replace(cfg, api_rate_per_minute=1_000_000))
    site = Site.objects.create(site_id=f"fz-{uuid.uuid4().hex[:8]}", name="Fuzz", domains=["example.com"]).site_id
    # The collector and the realtime worker on topics of their own.
    test_cfg = dataclasses.replace(cfg, events_topic=rt_topic, invalid_topic=invalid_topic)
    sink = KafkaSink(test_cfg.kafka, Spool(tmp_path / "spool", 64 << 20))
    monkeypatch.setattr(collector.runtime, "_ingestor", Ingestor(test_cfg, sink))
    events_tail, collector_tail = TopicTail(cfg, rt_topic), TopicTail(cfg, invalid_topic)  # both still empty
    payloads: list[bytes] = []

    try:
        phases = [
            ("api", lambda: fuzz_api(site_key, tally)),
            ("decoder", lambda: payloads.extend(fuzz_decoder(site, tally))),
            ("enrichment", lambda: fuzz_enrichment(tally)),
            ("beacon", lambda: fuzz_beacons(Client(), site, tally)),
        ]
        seconds = {}
        for name, phase in phases:
            phase_started = time.monotonic()
            phase()
            seconds[name] = round(time.monotonic() - phase_started)
        tally.notes.append(f"seconds per phase {seconds}")
        sink.flush(30)
        assert sink.spool.pending() == 0, "the collector spooled: Kafka refused events"

        # What the collector put on the log: valid events on the events topic, invalid ones only
        # on the invalid topic.
        queued = sink.stats["queued"]
        collector_events = events_tail.read(lambda m: True, queued, timeout=60, settle=1.0)
        events_tail.close()
        assert len(collector_events) == queued
        for msg in collector_events:
            decode(msg.value())  # raises InvalidEvent for an invalid event on the events topic
        refused = sum(n for key, n in sink.stats.items() if key.startswith("invalid_"))
        collector_invalid = collector_tail.read(lambda m: True, refused, timeout=30, settle=1.0)
        assert len(collector_invalid) == refused
        for msg in collector_invalid:
            assert dict(msg.headers())["source"] == b"collector"
            with pytest.raises(InvalidEvent):
                decode(msg.value() or b"")

        # The decoder's payloads through a realtime worker.
        now = int(time.time() * 1000)
        verdicts = [classify(p, now) for p in payloads]
        payloads = [p for p, v in zip(payloads, verdicts, strict=True) if v != "borderline"]
        verdicts = [v for v in verdicts if v != "borderline"]
        expected_invalid = Counter(p for p, v in zip(payloads, verdicts, strict=True) if v is not None)
        gen = DemoTraffic(site_id=site, seed=3)
        sentinels = [encode(gen.event(now - 30_000)) for _ in range(6)]
        produce_raw(cfg, rt_topic, payloads, sentinels)
        store = CounterStore(redis.Redis.from_url(cfg.redis_url), KeyLayout())
        group = f"fz-{uuid.uuid4().hex[:8]}"
        worker = build_processor(test_cfg, store, group, topic=rt_topic, max_batch_time=0.2)
        thread = threading.Thread(target=worker.run, daemon=True)
        thread.start()
        try:
            wait_consumed(store, group, rt_topic, end_offsets(cfg, rt_topic), timeout=300)
            dlq = collector_tail.read(lambda m: dict(m.headers()).get("source") == b"realtime",
                                      expected_invalid.total(), timeout=60, settle=2.0)  # fmt: skip
        finally:
            worker.signal_shutdown()
            thread.join(30)
        collector_tail.close()
        got_invalid = Counter(m.value() or b"" for m in dlq)
        reasons = Counter(dict(m.headers())["reason"].decode() for m in dlq)
        # No invalid payload was counted: none left a dedup mark under the identity it carries.
        counted_invalid = 0
        for payload in expected_invalid:
            try:
                doc = json.loads(payload)
            except ValueError:
                continue
            if isinstance(doc, dict) and isinstance(doc.get("site_id"), str) and isinstance(doc.get("event_id"), str):
                try:
                    counted_invalid += store.is_marked(doc["site_id"], doc["event_id"], int(time.time() * 1000))
                except ValueError:  # not a UUID: no event could carry it, so none was marked
                    continue
        retention_start = now - store.layout.retention_s * 1000 + 3_600_000
        valid_recent = [decode(p) for p, v in zip(payloads, verdicts, strict=True) if v is None]
        valid_recent = [e for e in valid_recent if retention_start < e.ts <= now]
        marked_now = int(time.time() * 1000)
        uncounted_valid = sum(not store.is_marked(e.site_id, e.event_id, marked_now) for e in valid_recent)
        tally.notes.append(
            f"collector: {len(collector_events)} events on the events topic, all valid; "
            f"{len(collector_invalid)} on the invalid topic, all invalid"
        )
        tally.notes.append(
            f"realtime: {expected_invalid.total()} invalid payloads -> {got_invalid.total()} in the invalid topic "
            f"{dict(reasons)}, {counted_invalid} counted; {len(valid_recent) - uncounted_valid}/{len(valid_recent)} "
            f"valid recent ones counted"
        )
        assert got_invalid == expected_invalid, (
            f"missing from the invalid topic: {(expected_invalid - got_invalid).total()}, "
            f"not invalid but there: {(got_invalid - expected_invalid).total()}"
        )
        assert counted_invalid == 0
        assert uncounted_valid == 0
    except BaseException as exc:
        tally.notes.append(f"FAILED: {type(exc).__name__}: {str(exc)[:300]}")
        raise
    finally:
        statuses = dict(sorted(tally.statuses.items()))
        results.record(
            Row(
                scenario="fuzzing",
                load=", ".join(f"{name} {n} cases" for name, n in tally.cases.items()),
                faults="generated inputs: API parameters, raw events, drafts, beacon bodies/queries/headers",
                sent=tally.cases.total(),
                errors_5xx=sum(n for key, n in tally.statuses.items() if key.rsplit(":", 1)[-1].startswith("5")),
                notes="; ".join([*tally.notes, f"outcomes {statuses}"]),
            ),
            started,
        )
    assert all(tally.cases[name] >= CASES for name in ("api", "decoder", "enrichment", "beacon")), tally.cases
