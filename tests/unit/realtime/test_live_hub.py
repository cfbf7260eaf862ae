"""The live hub's polls, sampling and stop, over a stand-in for the log's tail (the hub's own
logic; the real tail is tests/integration/realtime/test_tail.py's and the dashboard's)."""

from __future__ import annotations

import queue
import time
from collections.abc import Iterator

from footfall_capture.events import SCHEMA_VERSION, Event, encode
from realtime.live_hub import EVENTS, LiveHub
from realtime.live_tail import Arrival
from realtime.tail_lines import TailFilter


class StandInTail:
    """Yields what the test appends, as the log's tail would."""

    def __init__(self) -> None:
        self.appended: queue.Queue[bytes] = queue.Queue()
        self.closed = False

    def arrivals(self, timeout_s: float = 0.05) -> Iterator[Arrival]:
        try:
            yield Arrival(self.appended.get(timeout=timeout_s), {}, int(time.time() * 1000))
        except queue.Empty:
            return

    def close(self) -> None:
        self.closed = True


def event(n: int, site: str = "shop", path: str = "/a") -> bytes:
    ts = 1_763_700_000_000 + n
    return encode(Event(event_id=f"01890a5d-ac96-774b-bcce-{n:012x}", site_id=site, type="pageview", ts=ts,
                        received_at=ts, schema=SCHEMA_VERSION, url=f"https://shop.example{path}",
                        path=path))  # fmt: skip


def settle(tail: StandInTail) -> None:
    deadline = time.monotonic() + 5
    while not tail.appended.empty() and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.1)


def test_a_viewer_gets_what_arrived_after_its_cursor_newest_first_and_for_its_site() -> None:
    tail = StandInTail()
    hub = LiveHub(lambda kind: tail, idle_s=5)  # type: ignore[arg-type,return-value]
    wanted = TailFilter("shop", path="/a")
    start = hub.poll(EVENTS, wanted, None, 100)
    assert start.rows == []
    for n, (site, path) in enumerate([("shop", "/a"), ("other", "/a"), ("shop", "/b"), ("shop", "/a")]):
        tail.appended.put(event(n, site, path))
    settle(tail)
    answer = hub.poll(EVENTS, wanted, start.cursor_us, 100)
    assert [row["time"][-4:-1] for row in answer.rows] == ["003", "000"]  # events 3 then 0
    assert answer.one_in == 1
    assert hub.poll(EVENTS, wanted, answer.cursor_us, 100).rows == []  # nothing new since


def test_past_the_rate_a_viewer_gets_one_in_n() -> None:
    tail = StandInTail()
    hub = LiveHub(lambda kind: tail, idle_s=5)  # type: ignore[arg-type,return-value]
    start = hub.poll(EVENTS, TailFilter("shop"), None, 10)
    for n in range(100):
        tail.appended.put(event(n))
    settle(tail)
    answer = hub.poll(EVENTS, TailFilter("shop"), start.cursor_us, 10)
    assert answer.one_in == 10
    assert len(answer.rows) == 10


def test_the_reader_stops_and_closes_its_tail_when_nobody_polls() -> None:
    tails: list[StandInTail] = []

    def open_tail(kind: str) -> StandInTail:
        tails.append(StandInTail())
        return tails[-1]

    hub = LiveHub(open_tail, idle_s=0.3)  # type: ignore[arg-type]
    hub.poll(EVENTS, TailFilter("shop"), None, 10)
    assert hub.running() == [EVENTS]
    deadline = time.monotonic() + 5
    while hub.running() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert hub.running() == []
    assert tails[0].closed
    hub.poll(EVENTS, TailFilter("shop"), None, 10)  # a new viewer starts it again, on a new tail
    assert hub.running() == [EVENTS]
    assert len(tails) == 2
