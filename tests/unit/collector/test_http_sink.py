"""The host's HTTP transport against a scripted collector on a real socket: gzip'd batches
with the key, backoff honouring Retry-After, the spool while the collector is away, and
nothing lost or sent twice once it is back."""

from __future__ import annotations

import gzip
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from footfall_capture import http_sink
from footfall_capture.http_sink import Collector, HttpSink
from footfall_capture.spool import Spool
from tests.ports import free_port


@dataclass
class Script:
    """What the collector answers: the next status of ``statuses`` (the last repeats)."""

    statuses: list[int] = field(default_factory=lambda: [202])
    retry_after: str | None = None
    batches: list[list[dict]] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def received(self) -> list[dict]:
        return [item for batch in self.batches for item in batch]


def serve(script: Script, port: int) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(gzip.decompress(self.rfile.read(int(self.headers["Content-Length"]))))
            with script.lock:
                status = script.statuses[min(len(script.times), len(script.statuses) - 1)]
                script.times.append(time.monotonic())
                script.headers.append(dict(self.headers))
                if status == 202:
                    script.batches.append(body)
            rejected = sum(1 for item in body if item.get("type") == "bad")
            answer = json.dumps({"accepted": len(body) - rejected, "rejected": rejected}).encode()
            self.send_response(status)
            if status != 202 and script.retry_after:
                self.send_header("Retry-After", script.retry_after)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def port() -> int:
    return free_port()


@pytest.fixture
def sinks(tmp_path: Path, port: int) -> Iterator[list[HttpSink]]:
    made: list[HttpSink] = []
    yield made
    for sink in made:
        sink.close(timeout_s=0.5)


def new_sink(sinks: list[HttpSink], tmp_path: Path, port: int) -> HttpSink:
    sink = HttpSink(Collector(f"http://127.0.0.1:{port}", "shop", "ff_key_secret"), Spool(tmp_path / "spool", 1 << 24))
    sinks.append(sink)
    return sink


def events(n: int, kind: str = "pageview") -> list[dict]:
    return [{"site_id": "shop", "type": kind, "url": f"https://shop.test/{i}", "event_id": str(uuid.uuid4())}
            for i in range(n)]  # fmt: skip


def wait_for(condition: Callable[[], bool], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_events_arrive_in_gzipd_batches_with_the_key(tmp_path: Path, port: int, sinks: list[HttpSink]) -> None:
    script = Script()
    server = serve(script, port)
    try:
        sink = new_sink(sinks, tmp_path, port)
        sent = events(1200)
        assert {sink.send(e) for e in sent} == {"queued"}
        wait_for(lambda: len(script.received()) == len(sent))
        assert sorted(e["event_id"] for e in script.received()) == sorted(e["event_id"] for e in sent)
        assert max(len(b) for b in script.batches) <= http_sink.BATCH_EVENTS
        assert {h["Authorization"] for h in script.headers} == {"Bearer ff_key_secret"}
        assert {h["Content-Encoding"] for h in script.headers} == {"gzip"}
        wait_for(lambda: sink.stats["sent"] == len(sent))  # counted once the answer is read
    finally:
        server.shutdown()


def test_a_busy_collector_is_waited_for_as_it_asks_and_nothing_is_lost_or_doubled(
    tmp_path: Path, port: int, sinks: list[HttpSink]
) -> None:
    script = Script(statuses=[503, 202], retry_after="2")
    server = serve(script, port)
    try:
        sink = new_sink(sinks, tmp_path, port)
        sent = events(30)
        for e in sent:
            sink.send(e)
        wait_for(lambda: len(script.received()) == len(sent))
        assert script.times[1] - script.times[0] >= 1.9  # Retry-After: 2
        assert sorted(e["event_id"] for e in script.received()) == sorted(e["event_id"] for e in sent)
        wait_for(lambda: sink.stats["replayed"] == len(sent))  # counted once the spool's replay returns
        assert (sink.stats["send_failed"], sink.stats["spooled"]) == (1, 30)
        wait_for(lambda: sink.spool.pending() == 0)
    finally:
        server.shutdown()


def test_while_the_collector_is_down_events_wait_on_disk_and_follow_when_it_is_back(
    tmp_path: Path, port: int, sinks: list[HttpSink], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(http_sink, "BACKOFF_S", (0.5,))
    sink = new_sink(sinks, tmp_path, port)  # nobody listens on the port yet
    sent = events(40)
    for e in sent:
        sink.send(e)
    wait_for(lambda: sink.stats["spooled"] == len(sent))
    script = Script()
    server = serve(script, port)
    try:
        wait_for(lambda: len(script.received()) == len(sent))
        assert sorted(e["event_id"] for e in script.received()) == sorted(e["event_id"] for e in sent)
    finally:
        server.shutdown()


def test_closing_while_the_collector_is_down_spools_the_queue_for_the_next_process(
    tmp_path: Path, port: int, sinks: list[HttpSink]
) -> None:
    sink = new_sink(sinks, tmp_path, port)
    sent = events(25)
    for e in sent:
        sink.send(e)
    sink.close(timeout_s=0.5)
    assert sink.spool.pending() == len(sent)
    script = Script()
    server = serve(script, port)
    try:
        later = new_sink(sinks, tmp_path, port)  # the site's next process, same spool
        assert later.replay() == len(sent)
        assert sorted(e["event_id"] for e in script.received()) == sorted(e["event_id"] for e in sent)
    finally:
        server.shutdown()


def test_malformed_events_are_counted_not_sent_again(tmp_path: Path, port: int, sinks: list[HttpSink]) -> None:
    script = Script()
    server = serve(script, port)
    try:
        sink = new_sink(sinks, tmp_path, port)
        for e in events(3) + events(2, kind="bad"):
            sink.send(e)
        wait_for(lambda: sink.stats["rejected"] == 2)
        time.sleep(1.5)
        assert (len(script.batches), sink.stats["sent"], sink.spool.pending()) == (1, 3, 0)
    finally:
        server.shutdown()


@pytest.mark.parametrize("url", ["http://stats.example.com", "ftp://127.0.0.1", "file:///etc/passwd", "stats.example"])
def test_the_collector_url_is_https_or_loopback_http(url: str) -> None:
    with pytest.raises(ValueError, match="https://"):
        Collector(url, "shop", "key")
    assert Collector("https://stats.example.com/", "shop", "k").events_url == (
        "https://stats.example.com/api/v1/sites/shop/events"
    )
